import { describeTrigger, mergeRuns, notRun } from './workflow-runs';
import type { EventSummary, Workflow, WorkflowRun } from './types';

const workflow = (trigger: Workflow['trigger']): Workflow => ({
  id: 'p_1',
  owner_id: 'u_1',
  user_id: 'u_1',
  name: 'w',
  active: true,
  deployment_id: 'd_2',
  trigger,
  steps: ['prepare', 'check', 'finish'].map((name, i) => ({ name, cell_id: `c_${i}`, component_id: `sc_${i}`, code: true as const, props: {} })),
  settings: {},
  secrets: [],
  created_at: 1,
  updated_at: 1,
});

const run = (id: string, startedAt: string, over: Partial<WorkflowRun> = {}): WorkflowRun => ({
  id,
  status: 'success',
  started_at: startedAt,
  duration_ms: 5,
  deployment_id: 'd_2',
  failed_step: null,
  steps: [],
  ...over,
});

const live = (r: WorkflowRun, n: number): EventSummary => ({ id: `${n}-0`, indexed_at_ms: n, event: { k: 'run', msg: 'run', run: r }, metadata: { emit_id: `${r.id}:r0`, name: '$logs', emitter_id: 'p_1' } });

describe('workflow runs as the pages show them', () => {
  it('describes each kind of trigger', () => {
    expect(describeTrigger(workflow({ http: {}, endpoint_url: 'http://x/e/en1' }))).toEqual({ kind: 'http', label: 'HTTP', detail: 'callers get {"success":true}' });
    expect(describeTrigger(workflow({ http: { customResponse: true }, endpoint_url: 'u' })).detail).toBe('a step answers the caller with $.respond');
    expect(describeTrigger(workflow({ timer: { intervalSeconds: 60 } })).detail).toBe('every 60 s');
    expect(describeTrigger(workflow({ timer: { cron: '0 * * * *', timezone: 'Europe/Paris' } })).detail).toBe('cron 0 * * * * (Europe/Paris)');
    expect(describeTrigger(workflow({ source: 'dc_1' })).detail).toBe('events of dc_1');
    expect(describeTrigger(workflow({ source: { source: 'dc_2', managed: true } })).detail).toBe('events of dc_2 (deployed with the workflow)');
    expect(describeTrigger(workflow({ events: { emitter_id: 'p_*', event_name: '$errors' } })).detail).toBe('$errors of p_*');
    expect(describeTrigger(workflow({ manual: {} })).label).toBe('Manual');
  });

  it('merges fetched and live run records: once each, newest first, at most max', () => {
    const a = run('inv_a', '2026-11-23T10:00:00.000Z', { status: 'error' });
    const b = run('inv_b', '2026-11-23T10:00:02.000Z');
    const c = run('inv_c', '2026-11-23T10:00:01.000Z');
    const log: EventSummary = { id: '9-0', indexed_at_ms: 9, event: { k: 'log', msg: 'hi' }, metadata: { emit_id: 'x', name: '$logs', emitter_id: 'p_1' } };
    expect(mergeRuns([c, a], [live(b, 3), live(a, 1), log], 10).map((r) => r.id)).toEqual(['inv_b', 'inv_c', 'inv_a']);
    expect(mergeRuns([c, a], [live(b, 3)], 2).map((r) => r.id)).toEqual(['inv_b', 'inv_c']);
    expect(mergeRuns([], [], 10)).toEqual([]);
  });

  it('names the steps a run did not reach, for runs of the current deployment only', () => {
    const w = workflow({ manual: {} });
    const failed = run('inv_a', '2026-11-23T10:00:00.000Z', { status: 'error', failed_step: 'check', steps: [{ name: 'prepare', cell_id: 'c_0', duration_ms: 1 }, { name: 'check', cell_id: 'c_1', duration_ms: 1, error: { name: 'Error', message: 'no' } }] });
    expect(notRun(failed, w)).toEqual(['finish']);
    expect(notRun({ ...failed, deployment_id: 'd_1' }, w)).toEqual([]);
  });
});
