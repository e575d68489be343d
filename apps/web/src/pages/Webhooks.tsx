import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { ago, oneLine, when } from '../format';
import type { Source, Subscription, Webhook, WebhookDelivery } from '../types';
import { ConfirmButton, CopyButton, ErrorNote, useLoad } from '../components/ui';

/** Webhooks (POST/DELETE /v1/webhooks), the subscriptions feeding them, and their delivery attempts. */
export function WebhooksPage() {
  const hooks = useLoad(() => api.webhooks({ limit: 100 }), []);
  const subs = useLoad(() => api.subscriptions(), []);
  const sources = useLoad(() => api.sources({ limit: 100 }), []);
  const [created, setCreated] = useState<Webhook>();

  return (
    <section aria-labelledby="webhooks-title">
      <div class="page-head">
        <h1 id="webhooks-title">Webhooks</h1>
      </div>
      <CreateWebhook
        onCreated={(w) => {
          setCreated(w);
          hooks.reload();
        }}
      />
      {created?.secret ? (
        <div class="card secret" role="status">
          <p>
            Webhook <strong>{created.name ?? created.url}</strong> created. Its signing secret is shown only now: keep it to verify deliveries (docs/webhooks.md).
          </p>
          <p class="endpoint">
            <code data-copy={created.secret}>{created.secret}</code> <CopyButton text={created.secret} label="Copy secret" />
          </p>
        </div>
      ) : null}
      <ErrorNote error={hooks.error ?? subs.error} />
      {hooks.data && !hooks.data.data.length ? <p class="empty">No webhooks yet.</p> : null}
      <ul class="webhooks">
        {hooks.data?.data.map((w) => (
          <li key={w.id}>
            <WebhookCard
              webhook={w}
              subscriptions={(subs.data ?? []).filter((s) => s.listener_id === w.id)}
              sources={sources.data?.data ?? []}
              onChange={() => {
                hooks.reload();
                subs.reload();
              }}
            />
          </li>
        ))}
      </ul>
    </section>
  );
}

function CreateWebhook({ onCreated }: { onCreated: (w: Webhook) => void }) {
  const [url, setUrl] = useState('');
  const [name, setName] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="card"
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(undefined);
        try {
          onCreated(await api.createWebhook({ url: url.trim(), ...(name.trim() ? { name: name.trim() } : {}) }));
          setUrl('');
          setName('');
        } catch (err) {
          setError(err);
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2>New webhook</h2>
      <div class="grid2">
        <div>
          <label for="webhook-url">URL</label>
          <input id="webhook-url" type="url" required placeholder="https://example.com/hooks/events" value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
        </div>
        <div>
          <label for="webhook-name">Name</label>
          <input id="webhook-name" type="text" maxLength={255} placeholder="optional" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </div>
      </div>
      <ErrorNote error={error} />
      <button type="submit" disabled={busy || !url.trim()}>
        Create webhook
      </button>
    </form>
  );
}

const CHANNELS: Array<[string, string]> = [
  ['', 'default channel'],
  ['$errors', '$errors'],
  ['$logs', '$logs'],
];

/** A webhook's subscriptions are shown this many at a time: an account may have 10,000 (SUBSCRIPTIONS_MAX_PER_ACCOUNT). */
const SUBSCRIPTIONS_PAGE = 20;

function WebhookCard({ webhook: w, subscriptions, sources, onChange }: { webhook: Webhook; subscriptions: Subscription[]; sources: Source[]; onChange: () => void }) {
  const [shown, setShown] = useState(SUBSCRIPTIONS_PAGE);
  const more = Math.min(SUBSCRIPTIONS_PAGE, subscriptions.length - shown);
  const [emitter, setEmitter] = useState('');
  const [channel, setChannel] = useState('');
  const [error, setError] = useState<unknown>();
  const nameOf = (id: string) => (id === 'dc_*' ? 'all sources' : sources.find((s) => s.id === id)?.name ?? id);
  const title = w.name ?? w.url;
  const act = async (f: () => Promise<unknown>) => {
    setError(undefined);
    try {
      await f();
      onChange();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <article class="card webhook" aria-label={`Webhook ${title}`}>
      <div class="page-head">
        <div>
          <h2>{title}</h2>
          <p class="sub mono">
            {w.id} · {w.url}
          </p>
          {!w.active ? <p class="error">Disabled{w.disabled_reason ? `: ${w.disabled_reason}` : ''}</p> : null}
        </div>
        <ConfirmButton label="Delete webhook" question={`Delete the webhook ${title}? Its subscriptions go with it.`} confirm="Delete webhook" onConfirm={() => act(() => api.deleteWebhook(w.id))} />
      </div>

      <h3>Subscriptions</h3>
      {subscriptions.length ? (
        <ul class="subs">
          {subscriptions.slice(0, shown).map((s) => (
            <li key={s.id}>
              {nameOf(s.emitter_id)} <span class="channel">{s.event_name || 'default channel'}</span>{' '}
              <button type="button" class="link" onClick={() => act(() => api.unsubscribe({ emitter_id: s.emitter_id, listener_id: s.listener_id, event_name: s.event_name }))} aria-label={`Unsubscribe ${nameOf(s.emitter_id)} ${s.event_name || 'default channel'}`}>
                Remove
              </button>
            </li>
          ))}
        </ul>
      ) : (
        <p class="sub">Nothing feeds this webhook yet.</p>
      )}
      {more > 0 ? (
        <p class="row">
          <span class="sub">
            {shown} of {subscriptions.length} subscriptions shown
          </span>
          <button type="button" class="secondary" onClick={() => setShown((n) => n + SUBSCRIPTIONS_PAGE)}>
            Show {more} more subscriptions
          </button>
        </p>
      ) : null}
      <form
        class="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          if (emitter) void act(() => api.subscribe({ emitter_id: emitter, listener_id: w.id, event_name: channel }));
        }}
      >
        <label for={`sub-src-${w.id}`}>Source</label>
        <select id={`sub-src-${w.id}`} value={emitter} onChange={(e) => setEmitter(e.currentTarget.value)}>
          <option value="">— choose —</option>
          <option value="dc_*">All my sources</option>
          {sources.map((s) => (
            <option key={s.id} value={s.id}>
              {s.name}
            </option>
          ))}
        </select>
        <label for={`sub-ch-${w.id}`}>Channel</label>
        <select id={`sub-ch-${w.id}`} value={channel} onChange={(e) => setChannel(e.currentTarget.value)}>
          {CHANNELS.map(([v, l]) => (
            <option key={v} value={v}>
              {l}
            </option>
          ))}
        </select>
        <button type="submit" class="secondary" disabled={!emitter}>
          Subscribe
        </button>
      </form>
      <ErrorNote error={error} />
      <Deliveries id={w.id} />
    </article>
  );
}

/** The webhook's delivery attempts, newest first, refreshed while shown. */
function Deliveries({ id }: { id: string }) {
  const [open, setOpen] = useState(false);
  const [list, setList] = useState<WebhookDelivery[]>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    if (!open) return;
    let live = true;
    const load = () =>
      api.deliveries(id, { limit: 25 }).then(
        (p) => live && setList(p.data),
        (e) => live && setError(e),
      );
    void load();
    const timer = setInterval(load, 3000);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [id, open]);
  return (
    <details class="deliveries" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Delivery attempts</summary>
      <ErrorNote error={error} />
      {list && !list.length ? <p class="empty">No delivery attempts yet.</p> : null}
      {list?.length ? (
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">Delivery attempts, newest first</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Event</th>
                <th scope="col">Attempt</th>
                <th scope="col">Status</th>
                <th scope="col">Latency</th>
                <th scope="col">Response</th>
                <th scope="col">Next retry</th>
              </tr>
            </thead>
            <tbody>
              {list.map((d) => (
                <tr key={d.id}>
                  <td>
                    <time dateTime={new Date(d.created_at_ms).toISOString()} title={when(d.created_at_ms)}>
                      {ago(d.created_at_ms)}
                    </time>
                  </td>
                  <td class="mono">{d.event_id}</td>
                  <td>{d.attempt}</td>
                  <td>
                    <span class={`badge ${d.status === 'succeeded' ? 'badge--on' : 'badge--err'}`}>{d.status}</span> {d.response_code ?? ''}
                  </td>
                  <td>{d.latency_ms === null ? '—' : `${d.latency_ms} ms`}</td>
                  <td class="mono">{oneLine(d.error ?? d.response_body ?? '', 80) || '—'}</td>
                  <td>{d.next_attempt_at_ms ? when(d.next_attempt_at_ms) : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </details>
  );
}
