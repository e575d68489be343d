import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { ago, endpointOf } from '../format';
import { BASE } from '../router';
import type { Page, Source } from '../types';
import { CopyButton, ErrorNote, Status, useLoad, Pager, type PageCursor } from '../components/ui';

const PAGE = 20;

/** Every page of sources (for a search: the API lists, the browser filters). */
async function allSources(): Promise<Source[]> {
  const all: Source[] = [];
  let after: string | undefined;
  for (let i = 0; i < 50; i++) {
    const page = await api.sources({ limit: 100, after });
    all.push(...page.data);
    if (page.data.length < 100 || !page.page_info.end_cursor) break;
    after = page.page_info.end_cursor;
  }
  return all;
}

/** The sources list: like `pd list sources`, with search and pages. */
export function SourcesPage() {
  const [cursor, setCursor] = useState<PageCursor>({ n: 0 });
  const [search, setSearch] = useState('');
  const [term, setTerm] = useState('');
  const list = useLoad<Page<Source> | Source[]>(() => (term ? allSources() : api.sources({ limit: PAGE, after: cursor.after, before: cursor.before })), [cursor.after, cursor.before, term]);
  /** The page of matches shown (from 0): an org's sources may be a thousand, and each row shown reads its last event and errors. */
  const [matchPage, setMatchPage] = useState(0);
  const needle = term.toLowerCase();
  const matches = Array.isArray(list.data) ? list.data.filter((s) => [s.name, s.name_slug, s.id, s.component_id].some((f) => f.toLowerCase().includes(needle))) : undefined;
  const rows = matches ? matches.slice(matchPage * PAGE, (matchPage + 1) * PAGE) : list.data && !Array.isArray(list.data) ? list.data.data : [];
  const info = Array.isArray(list.data) ? undefined : list.data?.page_info;

  return (
    <section aria-labelledby="sources-title">
      <div class="page-head">
        <h1 id="sources-title">Sources</h1>
        <a class="button" href={`${BASE}/sources/new`}>
          New source
        </a>
      </div>
      <form
        role="search"
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          setTerm(search.trim());
          setMatchPage(0);
        }}
      >
        <label for="source-search" class="visually-hidden">
          Search sources
        </label>
        <input id="source-search" type="search" placeholder="Search by name, id or component" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
        <button type="submit" class="secondary">
          Search
        </button>
        {term ? (
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setSearch('');
              setTerm('');
              setMatchPage(0);
            }}
          >
            Clear
          </button>
        ) : null}
      </form>
      <ErrorNote error={list.error} />
      {list.loading && !list.data ? <p aria-live="polite">Loading…</p> : null}
      {list.data && !rows.length ? (
        <p class="empty">{term ? `No source matches “${term}”.` : <>No sources yet. <a href={`${BASE}/sources/new`}>Deploy your first one</a>.</>}</p>
      ) : null}
      {rows.length ? (
        <div class="table-wrap">
          <table class="sources">
            <caption class="visually-hidden">Your sources</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Component</th>
                <th scope="col">State</th>
                <th scope="col">Endpoint</th>
                <th scope="col">Last event</th>
                <th scope="col">Errors</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((s) => (
                <SourceRow key={s.id} source={s} />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {info ? (
        <Pager what="sources" info={info} pageSize={PAGE} cursor={cursor} onMove={setCursor} />
      ) : null}
      {matches?.length ? (
        <nav class="pager" aria-label="Pages of matching sources">
          <span>
            {matchPage * PAGE + 1}–{matchPage * PAGE + rows.length} of {matches.length} {matches.length === 1 ? 'match' : 'matches'}
          </span>
          <button type="button" class="secondary" disabled={matchPage === 0} onClick={() => setMatchPage((n) => n - 1)}>
            Newer
          </button>
          <button type="button" class="secondary" disabled={(matchPage + 1) * PAGE >= matches.length} onClick={() => setMatchPage((n) => n + 1)}>
            Older
          </button>
        </nav>
      ) : null}
    </section>
  );
}

const componentNames = new Map<string, Promise<string>>();
function componentName(id: string): Promise<string> {
  if (!componentNames.has(id)) componentNames.set(id, api.component(id, 'name,key').then((c) => c.key ?? c.name, () => id));
  return componentNames.get(id)!;
}

function SourceRow({ source: s }: { source: Source }) {
  const [component, setComponent] = useState(s.component_id);
  const [last, setLast] = useState<number | null | undefined>();
  const [errors, setErrors] = useState<number | undefined>();
  useEffect(() => {
    componentName(s.component_id).then(setComponent);
    api.events(s.id, { limit: 1 }).then((p) => setLast(p.data[0]?.indexed_at_ms ?? null), () => setLast(null));
    api.events(s.id, { limit: 1, event_name: '$errors' }).then((p) => setErrors(p.page_info.total_count), () => undefined);
  }, [s.id]);
  const endpoint = endpointOf(s.configured_props);
  return (
    <tr>
      <th scope="row">
        <a href={`${BASE}/sources/${encodeURIComponent(s.id)}`}>{s.name}</a>
        <div class="sub mono">{s.id}</div>
      </th>
      <td class="mono" data-label="Component">{component}</td>
      <td data-label="State">
        <Status active={s.active} />
      </td>
      <td data-label="Endpoint">
        {endpoint ? (
          <span class="endpoint">
            <code data-copy={endpoint}>{endpoint}</code> <CopyButton text={endpoint} label="Copy" />
          </span>
        ) : (
          <span class="sub">—</span>
        )}
      </td>
      <td data-label="Last event">{last === undefined ? '…' : last === null ? <span class="sub">none</span> : <time dateTime={new Date(last).toISOString()}>{ago(last)}</time>}</td>
      <td data-label="Errors">{errors === undefined ? '…' : errors > 0 ? <span class="badge badge--err">{errors}</span> : '0'}</td>
    </tr>
  );
}
