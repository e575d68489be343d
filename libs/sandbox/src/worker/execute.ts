import { performance } from 'node:perf_hooks';
import type { ExecuteResult, LogRecord, SandboxError } from '../types';
import type { WorkerExecuteTask } from '../worker-protocol';
import { describeError, withLogs } from './capture';
import { buildContext, FlowExit, makeDollar } from './context';
import { loadComponent } from './loader';
import { planFor } from './plan';
import { withInvocationEnv } from './process-env';
import { runSync, withTimeout } from './run-sync';
import { type InvocationState, makeEmit, type ResponsePort, sizedClone } from './services';

/** Calls a component function: its synchronous part under vm's timeout, its promise under a timer. */
export async function callBounded(fn: () => unknown, deadline: number, what: string, timeoutMs: number): Promise<unknown> {
  const result = runSync(fn, Math.max(1, deadline - performance.now()), what, timeoutMs);
  if (result && typeof (result as PromiseLike<unknown>).then === 'function') {
    const left = deadline - performance.now();
    return withTimeout(Promise.resolve(result as PromiseLike<unknown>), left, what, timeoutMs);
  }
  return result;
}

/** Runs one method; `port` (default: the task's) gets the `respond()` payload at once and is closed when the run ends. */
export function execute(task: Omit<WorkerExecuteTask, 'port'>, port: ResponsePort | undefined = (task as WorkerExecuteTask).port): Promise<ExecuteResult> {
  const logs: LogRecord[] = [];
  return withLogs(logs, () => withInvocationEnv(task.sourceId, () => executeWith(task, logs, port)));
}

async function executeWith(task: Omit<WorkerExecuteTask, 'port'>, logs: LogRecord[], port: ResponsePort | undefined): Promise<ExecuteResult> {
  const started = performance.now();
  const deadline = started + task.timeoutMs;
  const state: InvocationState = {
    limits: task.limits,
    snapshot: task.db ?? {},
    written: new Map(),
    emits: [],
    logs,
    sends: [],
    exports: {},
    port,
    closed: false,
    respondedBefore: task.responded === true,
  };
  let error: SandboxError | undefined;
  let returnValue: unknown;
  let exit: ExecuteResult['exit'];
  let isAction = false;
  try {
    const { definition } = await loadComponent(task.bundle, task.timeoutMs);
    const plan = planFor(definition);
    isAction = plan.isAction || task.steps !== undefined;
    const ctx = buildContext(plan, { props: task.props ?? {}, endpointUrl: task.endpointUrl }, state);
    let target: unknown;
    let arg: unknown;
    if (task.method === 'run') {
      target = definition.run;
      arg = isAction ? { $: makeDollar(state), steps: task.steps ?? {} } : task.event;
    } else {
      const hooks = definition.hooks as Record<string, unknown> | undefined;
      target = hooks && typeof hooks === 'object' ? hooks[task.method] : undefined;
    }
    if (typeof target === 'function') {
      const fn = target as (a?: unknown) => unknown;
      const value = await callBounded(() => fn.call(ctx, arg), deadline, task.method, task.timeoutMs);
      if (isAction && value !== undefined) returnValue = sizedClone(value, 'the return value of run', task.limits.eventMaxBytes, 'ReturnValueSizeLimitError');
    } else if (task.method === 'run' && !isAction) {
      // A source without run (Pipedream's schedule sources) emits each triggering event unchanged.
      makeEmit(state)(task.event);
    }
  } catch (e) {
    if (e instanceof FlowExit) exit = { reason: e.reason };
    else error = describeError(e);
  } finally {
    state.closed = true;
    // `$.flow.exit()` whose throw the step caught (a try/catch around it) still ends the run after this step.
    if (state.exit && !error) exit = state.exit;
    port?.close();
  }
  const dbWrites: Record<string, unknown> = {};
  // Defined, not assigned: a key `__proto__` is a db key like any other, not the change set's prototype.
  for (const [k, json] of state.written) Object.defineProperty(dbWrites, k, { value: json === undefined ? undefined : JSON.parse(json), enumerable: true, writable: true, configurable: true });
  const result: ExecuteResult = { emits: state.emits, dbWrites, logs: state.logs, durationMs: performance.now() - started };
  if (error) result.error = error;
  if (state.response) result.response = state.response;
  if (isAction) {
    result.returnValue = returnValue;
    result.exports = state.exports;
    result.sends = state.sends;
    if (exit) result.exit = exit;
  }
  return result;
}
