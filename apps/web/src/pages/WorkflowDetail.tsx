import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api';
import { ago, clip, when } from '../format';
import type { RunStep, Workflow, WorkflowRun } from '../types';
import { EventList, KEEP, summaryLine, useEvents } from '../components/events';
import { CopyButton, ErrorNote, JsonText, Status, useLoad } from '../components/ui';
import { RunStatus } from '../components/workflow';
import { describeTrigger, mergeRuns, notRun } from '../workflow-runs';
import './workflows.css';

const RUNS = 10;
type Tab = 'runs' | 'events' | 'logs';
const TABS: Tab[] = ['runs', 'events', 'logs'];

const history = (id: string) => (channel: string | undefined) =>
  channel === '$errors' ? api.workflowErrors(id, { limit: KEEP, expand: 'event,summary' }) : api.workflowEvents(id, { limit: KEEP, expand: 'event,summary', event_name: channel });

export function WorkflowDetailPage({ id }: { id: string }) {
  const wf = useLoad(() => api.workflow(id), [id]);
  const [tab, setTab] = useState<Tab>('runs');
  const emits = useEvents(id, 'emits', 0, history(id));
  const obs = useEvents(id, 'observations', 0, history(id));
  const fetched = useLoad(() => api.workflowRuns(id, RUNS), [id]);
  const [notice, setNotice] = useState<string>();
  const [error, setError] = useState<unknown>();
  const runs = mergeRuns(fetched.data ?? [], obs.events, RUNS);
  // A run of a deployment newer than the one shown (a `pd deploy` or PUT meanwhile): read the workflow again, once per deployment.
  const seen = useRef(new Set<string>());
  const newest = runs[0]?.deployment_id;
  useEffect(() => {
    if (!wf.data || !newest || newest === wf.data.deployment_id || seen.current.has(newest)) return;
    seen.current.add(newest);
    wf.reload();
  }, [newest, wf.data?.deployment_id]);

  if (wf.error) return <ErrorNote error={wf.error} />;
  const w = wf.data;
  if (!w) return <p aria-live="polite">Loading…</p>;
  const trigger = describeTrigger(w);
  const url = w.trigger.endpoint_url;
  const errors = obs.events.filter((e) => e.metadata.name === '$errors').length;

  const act = async (f: () => Promise<string>) => {
    setError(undefined);
    setNotice(undefined);
    try {
      setNotice(await f());
    } catch (e) {
      setError(e);
    }
  };
  /** Arrow keys move between the tabs and focus the chosen one (the WAI-ARIA tabs pattern). */
  const onTabKey = (e: KeyboardEvent, from: Tab) => {
    const step = e.key === 'ArrowRight' ? 1 : e.key === 'ArrowLeft' ? -1 : 0;
    if (!step) return;
    const to = TABS[(TABS.indexOf(from) + step + TABS.length) % TABS.length];
    setTab(to);
    document.getElementById(`tab-${to}`)?.focus();
  };
  const tabProps = (t: Tab) => ({ type: 'button' as const, role: 'tab' as const, id: `tab-${t}`, 'aria-controls': `panel-${t}`, 'aria-selected': tab === t, tabIndex: tab === t ? 0 : -1, onClick: () => setTab(t), onKeyDown: (e: KeyboardEvent) => onTabKey(e, t) });

  return (
    <section aria-labelledby="workflow-title">
      <div class="page-head">
        <div>
          <h1 id="workflow-title">{w.name}</h1>
          <p class="sub mono">
            {w.id} · deployment {w.deployment_id} · updated {when(w.updated_at * 1000)}
          </p>
        </div>
        <Status active={w.active} />
      </div>

      <div class="card endpoint-card">
        <h2>Trigger: {trigger.label}</h2>
        {url ? (
          <p class="endpoint">
            <code data-copy={url} id="trigger-url">
              {url}
            </code>{' '}
            <CopyButton text={url} label="Copy URL" />
          </p>
        ) : null}
        <p class="hint">{url ? `Every HTTP request to this URL runs the workflow: ${trigger.detail}.` : trigger.detail}</p>
      </div>

      <div class="toolbar" role="group" aria-label="Workflow actions">
        <button type="button" disabled={!w.active} title={w.active ? undefined : 'The workflow is not active'} onClick={() => act(async () => `Run requested (${(await api.runWorkflow(w.id)).invocation_id}).`)}>
          Run now
        </button>
      </div>
      <p aria-live="polite" class="notice">
        {notice}
      </p>
      <ErrorNote error={error} />

      <StepsCard workflow={w} />

      <div class="tabs tabs--wrap" role="tablist" aria-label="Runs and event streams">
        <button {...tabProps('runs')}>Runs ({runs.length})</button>
        <button {...tabProps('events')}>Emitted events ({emits.events.length})</button>
        <button {...tabProps('logs')}>Logs and errors {errors ? <span class="badge badge--err">{errors} $errors</span> : null}</button>
      </div>
      <div role="tabpanel" id="panel-runs" aria-labelledby="tab-runs" hidden={tab !== 'runs'}>
        <p class="live" aria-live="polite">
          <span class={`dot dot--${obs.state}`} aria-hidden="true" /> {obs.state === 'live' ? 'Live' : 'Not live'}
        </p>
        <ErrorNote error={fetched.error} />
        {runs.length ? (
          <ol class="runs" aria-label="Last runs">
            {runs.map((r, i) => (
              <RunItem key={r.id} run={r} workflow={w} open={i === 0} />
            ))}
          </ol>
        ) : (
          <p class="empty">{url ? 'No runs yet: send a request to the trigger URL, or run the workflow now.' : 'No runs yet.'}</p>
        )}
      </div>
      <div role="tabpanel" id="panel-events" aria-labelledby="tab-events" hidden={tab !== 'events'}>
        <EventList label="Emitted events" list={emits} empty="No emitted events ($.send.emit of a successful run)." />
      </div>
      <div role="tabpanel" id="panel-logs" aria-labelledby="tab-logs" hidden={tab !== 'logs'}>
        <EventList
          label="Logs and errors"
          list={obs}
          empty="No logs or errors."
          actions={(e) =>
            e.metadata.name === '$errors' ? (
              <button type="button" class="secondary" disabled={!w.active} aria-label={`Replay the event of this error (${summaryLine(e)})`} onClick={() => act(async () => `Replay requested (${(await api.replayWorkflow(w.id, e.id)).invocation_id}): its original event runs through the current deployment.`)}>
                Replay
              </button>
            ) : null
          }
        />
      </div>
    </section>
  );
}

function StepsCard({ workflow: w }: { workflow: Workflow }) {
  return (
    <details class="card props-view">
      <summary>Steps ({w.steps.length})</summary>
      <ol class="steps-def">
        {w.steps.map((s) => (
          <li key={s.cell_id}>
            <strong>{s.name}</strong> <span class="sub mono">{s.action ? `action ${s.action}` : 'code'} · {s.cell_id}</span>
            {Object.keys(s.props).length ? <JsonText value={s.props} /> : null}
          </li>
        ))}
      </ol>
    </details>
  );
}

/**
 * One run, step by step: each step's outcome, duration, return value and exports, the failing step's error; steps that did not run.
 * Its steps are rendered only while it is open (the newest is, at first): each of ten runs may hold megabytes of return values.
 */
function RunItem({ run: r, workflow: w, open }: { run: WorkflowRun; workflow: Workflow; open: boolean }) {
  const [shown, setShown] = useState(open);
  const started = Date.parse(r.started_at);
  const skipped = notRun(r, w);
  return (
    <li class={`run run--${r.status}`}>
      <details open={open} onToggle={(e) => setShown(e.currentTarget.open)}>
        <summary>
          <RunStatus status={r.status} /> <time dateTime={r.started_at} title={when(started)}>{ago(started)}</time> · {r.duration_ms} ms
          {r.failed_step ? <> · failed at step <strong>{r.failed_step}</strong></> : null}
          <span class="sub mono"> · {r.deployment_id === w.deployment_id ? 'current deployment' : `deployment ${r.deployment_id}`}</span>
        </summary>
        {shown ? (
          <>
            <p class="sub mono">run {r.id}</p>
            <ol class="run-steps" aria-label={`Steps of run ${r.id}`}>
              {r.steps.map((s) => (
                <StepItem key={s.name} step={s} />
              ))}
              {skipped.map((name) => (
                <li key={name} class="run-step run-step--skipped">
                  <span class="run-step__name">{name}</span> <span class="badge badge--off">not run</span>
                </li>
              ))}
            </ol>
          </>
        ) : null}
      </details>
    </li>
  );
}

function StepItem({ step: s }: { step: RunStep }) {
  const outcome = s.error ? { text: 'failed', cls: 'badge--err' } : s.exit ? { text: 'exited', cls: 'badge--off' } : { text: 'succeeded', cls: 'badge--on' };
  const exports = Object.entries(s.exports ?? {});
  return (
    <li class={`run-step${s.error ? ' run-step--error' : ''}`}>
      <span class="run-step__name">{s.name}</span> <span class={`badge ${outcome.cls}`}>{outcome.text}</span> <span class="sub">{s.duration_ms} ms</span>
      {s.error ? (
        <p class="error-text">
          {clip(`${s.error.name}: ${s.error.message}`)}
        </p>
      ) : null}
      {s.exit ? <p class="sub">$.flow.exit({s.exit.reason ? JSON.stringify(s.exit.reason) : ''})</p> : null}
      <dl class="run-step__values">
        {'return_value' in s ? (
          <>
            <dt>Return value</dt>
            <dd>
              {s.return_value === undefined ? <pre>undefined</pre> : <JsonText value={s.return_value} />}
            </dd>
          </>
        ) : null}
        {exports.length ? (
          <>
            <dt>Exports</dt>
            <dd>
              <JsonText value={Object.fromEntries(exports)} />
            </dd>
          </>
        ) : null}
        {s.inputs && Object.keys(s.inputs).length ? (
          <>
            <dt>Inputs</dt>
            <dd>
              <JsonText value={s.inputs} />
            </dd>
          </>
        ) : null}
      </dl>
    </li>
  );
}
