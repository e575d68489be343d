import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, onUnauthorized } from './api';
import { session } from './session';
import { interceptLinks, navigate, useLocation, BASE } from './router';
import type { Me } from './types';
import { SignIn } from './pages/SignIn';
import { SourcesPage } from './pages/Sources';
import { NewSourcePage } from './pages/NewSource';
import { SourceDetailPage } from './pages/SourceDetail';
import { WebhooksPage } from './pages/Webhooks';
import { WorkflowsPage } from './pages/Workflows';
import { WorkflowDetailPage } from './pages/WorkflowDetail';
import { AccountPage } from './pages/Account';
import './styles.css';

const NAV = [
  { href: `${BASE}/`, label: 'Sources', match: (p: string) => p === '/' || p.startsWith('/sources') },
  { href: `${BASE}/workflows`, label: 'Workflows', match: (p: string) => p.startsWith('/workflows') },
  { href: `${BASE}/webhooks`, label: 'Webhooks', match: (p: string) => p.startsWith('/webhooks') },
  { href: `${BASE}/account`, label: 'Account', match: (p: string) => p.startsWith('/account') },
];

function App() {
  const { path } = useLocation();
  const [me, setMe] = useState<Me | undefined>();
  const [signedIn, setSignedIn] = useState(Boolean(session.key()));
  const [org, setOrg] = useState(session.org());

  const signOut = () => {
    session.signOut();
    setMe(undefined);
    setSignedIn(false);
    navigate('/', true);
  };
  useEffect(() => onUnauthorized(signOut), []);
  // Read again on every page: a workspace the user no longer belongs to (removed from the org) is dropped
  // for their own, instead of every page answering that the org is not found.
  useEffect(() => {
    if (!signedIn) return;
    api.me().then((m) => {
      setMe(m);
      const chosen = session.org();
      if (chosen && !(m.orgs ?? []).some((o) => o.id === chosen)) {
        session.setOrg(null);
        setOrg(null);
      }
    }, () => undefined);
  }, [signedIn, path]);

  if (!signedIn)
    return (
      <SignIn
        onSignedIn={(user) => {
          setMe(user);
          setSignedIn(true);
        }}
      />
    );

  const orgs = me?.orgs ?? [];
  const page = route(path, org);
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={`${BASE}/`}>
          Event sources
        </a>
        <nav aria-label="Main">
          <ul>
            {NAV.map((n) => (
              <li key={n.href}>
                <a href={n.href} aria-current={n.match(path) ? 'page' : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="top__account">
          {orgs.length ? (
            <label class="org-switch">
              <span>Workspace</span>
              <select
                value={org ?? ''}
                onChange={(e) => {
                  const v = e.currentTarget.value || null;
                  session.setOrg(v);
                  setOrg(v);
                  navigate('/');
                }}
              >
                <option value="">{me?.username ?? 'Me'} (personal)</option>
                {orgs.map((o) => (
                  <option key={o.id} value={o.id}>
                    {o.name ?? o.orgname ?? o.id}
                  </option>
                ))}
              </select>
            </label>
          ) : null}
          <span class="who">{me?.username}</span>
          <button type="button" class="secondary" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {page}
      </main>
    </>
  );
}

/** The page for a path; `org` is a key so that switching the workspace reloads every page. */
function route(path: string, org: string | null) {
  const k = org ?? 'me';
  if (path === '/' || path === '/sources') return <SourcesPage key={k} />;
  if (path === '/sources/new') return <NewSourcePage key={k} />;
  const edit = /^\/sources\/([^/]+)\/edit$/.exec(path);
  if (edit) return <NewSourcePage key={`${k}${edit[1]}`} editId={decodeURIComponent(edit[1])} />;
  const detail = /^\/sources\/([^/]+)$/.exec(path);
  if (detail) return <SourceDetailPage key={`${k}${detail[1]}`} id={decodeURIComponent(detail[1])} />;
  if (path === '/workflows') return <WorkflowsPage key={k} />;
  const workflow = /^\/workflows\/([^/]+)$/.exec(path);
  if (workflow) return <WorkflowDetailPage key={`${k}${workflow[1]}`} id={decodeURIComponent(workflow[1])} />;
  if (path === '/webhooks') return <WebhooksPage key={k} />;
  if (path === '/account') return <AccountPage key={k} />;
  return (
    <section>
      <h1>Not found</h1>
      <p>
        There is no page at this address. <a href={`${BASE}/`}>Go to your sources</a>.
      </p>
    </section>
  );
}

interceptLinks();
render(<App />, document.getElementById('app')!);
