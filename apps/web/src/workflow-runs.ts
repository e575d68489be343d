import type { EventSummary, Workflow, WorkflowRun } from './types';

// What the workflow pages show of a workflow and its run records (docs/workflows.md), without the page around it.

/** The kind of a workflow's trigger (`http`, `timer`, `source`, `events`, `manual`) and a line saying what it is. */
export function describeTrigger(w: Workflow): { kind: string; label: string; detail: string } {
  const t = w.trigger;
  const kind = Object.keys(t).find((k) => k !== 'endpoint_url') ?? 'manual';
  const v = t[kind] as Record<string, unknown> | string | null | undefined;
  const o = (v && typeof v === 'object' ? v : {}) as Record<string, unknown>;
  switch (kind) {
    case 'http':
      return { kind, label: 'HTTP', detail: o.customResponse ? 'a step answers the caller with $.respond' : 'callers get {"success":true}' };
    case 'timer':
      return { kind, label: 'Timer', detail: o.cron ? `cron ${String(o.cron)}${o.timezone ? ` (${String(o.timezone)})` : ''}` : `every ${String(o.intervalSeconds)} s` };
    case 'source':
      return { kind, label: 'Source', detail: `events of ${typeof v === 'string' ? v : String(o.source ?? 'its source')}${o.managed ? ' (deployed with the workflow)' : ''}` };
    case 'events':
      return { kind, label: 'Events', detail: `${o.event_name ? String(o.event_name) : 'default channel'} of ${String(o.emitter_id)}` };
    default:
      return { kind, label: 'Manual', detail: 'Run now, the API’s run endpoint and replays' };
  }
}

/** The run records of `GET /runs` and those arriving live on the observations stream (`$logs` with `k: "run"`), newest first. */
export function mergeRuns(fetched: WorkflowRun[], live: EventSummary[], max: number): WorkflowRun[] {
  const byId = new Map<string, WorkflowRun>();
  for (const e of live) {
    const ev = e.event as { k?: string; run?: WorkflowRun } | null;
    if (e.metadata.name === '$logs' && ev?.k === 'run' && ev.run) byId.set(ev.run.id, ev.run);
  }
  for (const r of fetched) if (!byId.has(r.id)) byId.set(r.id, r);
  return [...byId.values()].sort((a, b) => Date.parse(b.started_at) - Date.parse(a.started_at)).slice(0, max);
}

/** The steps of the current deployment a failed or exited run did not reach (unknown for runs of an earlier deployment). */
export function notRun(run: WorkflowRun, w: Workflow): string[] {
  if (run.deployment_id !== w.deployment_id) return [];
  const ran = new Set(run.steps.map((s) => s.name));
  return w.steps.filter((s) => !ran.has(s.name)).map((s) => s.name);
}
