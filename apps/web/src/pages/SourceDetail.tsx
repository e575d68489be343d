import { useState } from 'preact/hooks';
import { api } from '../api';
import { endpointOf, when } from '../format';
import { navigate, BASE } from '../router';
import { EventList, KEEP, useEvents } from '../components/events';
import { ConfirmButton, CopyButton, ErrorNote, JsonText, Status, useLoad } from '../components/ui';

/** The retained events, whole (`expand=event`): an event over 1 KB would otherwise show only its truncation marker. */
const history = (id: string) => (channel: string | undefined) => api.events(id, { limit: KEEP, expand: 'event,summary', event_name: channel });

export function SourceDetailPage({ id }: { id: string }) {
  const src = useLoad(() => api.source(id), [id]);
  const [generation, setGeneration] = useState(0);
  const [tab, setTab] = useState<'events' | 'logs'>('events');
  const emits = useEvents(id, 'emits', generation, history(id));
  const obs = useEvents(id, 'observations', generation, history(id));
  const [notice, setNotice] = useState<string>();
  const [error, setError] = useState<unknown>();

  if (src.error) return <ErrorNote error={src.error} />;
  const s = src.data;
  if (!s) return <p aria-live="polite">Loading…</p>;
  const endpoint = endpointOf(s.configured_props);
  const errors = obs.events.filter((e) => e.metadata.name === '$errors').length;

  /** Arrow keys move between the tabs and focus the chosen one (the WAI-ARIA tabs pattern). */
  const switchTab = (to: 'events' | 'logs') => {
    setTab(to);
    document.getElementById(`tab-${to}`)?.focus();
  };

  const act = async (f: () => Promise<string>) => {
    setError(undefined);
    setNotice(undefined);
    try {
      setNotice(await f());
    } catch (e) {
      setError(e);
    }
  };

  return (
    <section aria-labelledby="source-title">
      <div class="page-head">
        <div>
          <h1 id="source-title">{s.name}</h1>
          <p class="sub mono">
            {s.id} · component {s.component_id} · created {when(s.created_at * 1000)}
          </p>
        </div>
        <Status active={s.active} />
      </div>

      {endpoint ? (
        <div class="card endpoint-card">
          <h2>Endpoint</h2>
          <p class="endpoint">
            <code data-copy={endpoint} id="endpoint-url">
              {endpoint}
            </code>{' '}
            <CopyButton text={endpoint} label="Copy URL" />
          </p>
          <p class="hint">Every HTTP request to this URL (and any path below it) runs the source.</p>
        </div>
      ) : null}

      <div class="toolbar" role="group" aria-label="Source actions">
        <button type="button" disabled={!s.active} title={s.active ? undefined : 'Activate the source to run it'} onClick={() => act(async () => `Run requested (${(await api.runSource(s.id)).invocation_id}).`)}>
          Run now
        </button>
        <button
          type="button"
          class="secondary"
          onClick={() =>
            act(async () => {
              await api.updateSource(s.id, { component_id: s.component_id, active: !s.active });
              src.reload();
              return s.active ? 'Deactivated.' : 'Activated.';
            })
          }
        >
          {s.active ? 'Deactivate' : 'Activate'}
        </button>
        <a class="button secondary" href={`${BASE}/sources/${encodeURIComponent(s.id)}/edit`}>
          Edit code and props
        </a>
        <ConfirmButton
          label="Delete events"
          question={`Delete every retained event of ${s.name} (emits, logs and errors)?`}
          confirm="Delete events"
          onConfirm={async () => {
            await api.deleteEvents(s.id);
            setNotice('Events deleted.');
            setGeneration((g) => g + 1);
          }}
        />
        <ConfirmButton
          label="Delete source"
          question={`Delete the source ${s.name}? Its endpoint stops answering and its events go.`}
          confirm="Delete source"
          onConfirm={async () => {
            await api.deleteSource(s.id);
            navigate('/');
          }}
        />
      </div>
      <p aria-live="polite" class="notice">
        {notice}
      </p>
      <ErrorNote error={error} />

      <details class="card props-view">
        <summary>Configured props</summary>
        <JsonText value={s.configured_props} />
      </details>

      <div class="tabs" role="tablist" aria-label="Event streams">
        <button type="button" role="tab" id="tab-events" aria-controls="panel-events" aria-selected={tab === 'events'} tabIndex={tab === 'events' ? 0 : -1} onClick={() => setTab('events')} onKeyDown={(e) => e.key === 'ArrowRight' && switchTab('logs')}>
          Events ({emits.events.length})
        </button>
        <button type="button" role="tab" id="tab-logs" aria-controls="panel-logs" aria-selected={tab === 'logs'} tabIndex={tab === 'logs' ? 0 : -1} onClick={() => setTab('logs')} onKeyDown={(e) => e.key === 'ArrowLeft' && switchTab('events')}>
          Logs and errors {errors ? <span class="badge badge--err">{errors} $errors</span> : null}
        </button>
      </div>
      <div role="tabpanel" id="panel-events" aria-labelledby="tab-events" hidden={tab !== 'events'}>
        <EventList label="Events" list={emits} empty={endpoint ? 'No events yet: send a request to the endpoint, or run the source.' : 'No events yet.'} />
      </div>
      <div role="tabpanel" id="panel-logs" aria-labelledby="tab-logs" hidden={tab !== 'logs'}>
        <EventList label="Logs and errors" list={obs} empty="No logs or errors." />
      </div>
    </section>
  );
}
