import { TimeSlicer } from '@app/contracts';
import { ADDITIONAL_PROPS_MAX_BYTES, ADDITIONAL_PROPS_MAX_COUNT, OPTIONS_MAX_BYTES } from '@app/component-model';
import { defaultFetchText } from './bundler';
import { IsolatedRunner, type SandboxIsolationOptions } from './isolation/isolated-runner';
import { ComponentPreparer, prepareKey, type PreparedComponent } from './preparer';
import { InstallRefusedError } from './types';
import { checkedExecuteResult, checkedResponse } from './result-check';
import type {
  AdditionalPropsResult,
  DescribeOptions,
  DescribeResult,
  ExecuteBatchOptions,
  ExecuteBatchOutcome,
  ExecuteBatchesOptions,
  ExecuteBatchesOutcome,
  ExecuteBatchTask,
  ExecuteOptions,
  ExecuteResult,
  ExecuteTask,
  FetchText,
  HttpResponsePayload,
  OptionsInput,
  OptionsResult,
  PreviousProp,
  SandboxError,
  SandboxLogger,
  SandboxPoolOptions,
  SandboxPoolStats,
} from './types';
import { cancelledError, sandboxError as err, WorkerPool, type TaskOutcome } from './worker-pool';
import type { ResponseMessage, WorkerAdditionalPropsTask, WorkerDescribeTask, WorkerExecuteBatchTask, WorkerExecuteTask, WorkerOptionsTask, WorkerTask } from './worker-protocol';

/** Where worker tasks run: in this process's pool, or in the account's sandbox process. */
interface TaskRunner {
  /** `signal` cancels the task: not started, it never starts; running, its worker or sandbox process is stopped. */
  run<T>(account: string, task: WorkerTask, timeoutMs: number, onResponse?: (r: ResponseMessage) => void, signal?: AbortSignal): Promise<TaskOutcome<T>>;
  stats(): SandboxPoolStats;
  restart(accounts?: readonly string[]): number;
  retire(accounts: readonly string[]): number;
  close(graceMs?: number): Promise<void>;
}

/** An account name for calls that name none (tests, tools): they share one sandbox. */
const NO_ACCOUNT = '-';

/** `p`, or a TimeoutError after `ms`, or a CancelledError once `signal` is aborted (what `p` does goes on unawaited). */
function withDeadline<T>(p: Promise<T>, ms: number, message: string, signal?: AbortSignal): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let cancel: (() => void) | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(message), { name: 'TimeoutError' })), ms);
    cancel = () => reject(Object.assign(new Error(cancelledError().message), { name: cancelledError().name }));
    if (signal?.aborted) cancel();
    else signal?.addEventListener('abort', cancel, { once: true });
  });
  return Promise.race([p, t]).finally(() => {
    clearTimeout(timer);
    signal?.removeEventListener('abort', cancel!);
  });
}

/**
 * Runs component code: reading a component (`describe`), running its
 * `run`/hooks (`execute`) and its async prop `options()`. Bundling and npm
 * installs happen here (no component code runs for them); the code itself runs
 * in worker threads — with `isolation`, in the account's own sandbox process
 * (see docs/sandbox.md), without it in this process's Piscina pool. Never
 * throws for anything the component does: failures come back as `error`.
 */
export class SandboxPool {
  private readonly runner: TaskRunner;
  private readonly preparer: ComponentPreparer;
  private readonly logger?: SandboxLogger;
  private readonly fetchText: FetchText;

  constructor(opts: SandboxPoolOptions & { isolation?: SandboxIsolationOptions }) {
    this.logger = opts.logger;
    this.fetchText = opts.fetchText ?? defaultFetchText();
    const vmTimeout = opts.vmTimeout === false ? 'never' : opts.vmTimeout === true || opts.vmTimeout === undefined ? 'always' : opts.vmTimeout;
    const concurrentTasksPerWorker = Math.max(1, Math.floor(opts.concurrentTasksPerWorker ?? 1));
    if (opts.isolation) {
      this.runner = new IsolatedRunner({ ...opts.isolation, npmCacheDir: opts.npmCacheDir, heapMb: opts.heapMb, vmTimeout, concurrentTasksPerWorker, logger: opts.logger });
    } else {
      const pool = new WorkerPool({ threads: opts.threads, heapMb: opts.heapMb, vmTimeout, concurrentTasksPerWorker, logger: opts.logger });
      // No process per account to restart: every account's code shares this process's workers (SANDBOX_ISOLATION=none, one trusted team).
      this.runner = { run: (_account, task, timeoutMs, onResponse, signal) => pool.run(task, timeoutMs, onResponse, signal), stats: () => pool.stats(), restart: () => 0, retire: () => 0, close: (g) => pool.close(g) };
    }
    this.preparer = new ComponentPreparer({
      npmCacheDir: opts.npmCacheDir,
      npmRegistry: opts.npmRegistry,
      installTimeoutMs: opts.installTimeoutMs ?? 300_000,
      installMaxBytes: opts.installMaxBytes,
      logger: opts.logger,
    });
  }

  /** Figures for metrics: worker threads, tasks waiting or running, tasks completed, utilization (0–1) since start. */
  stats(): SandboxPoolStats {
    return this.runner.stats();
  }

  /**
   * Restarts the sandbox processes of these accounts because who may reach them
   * changed: runs in flight run again on the new process. Returns how many processes were stopped.
   */
  restartSandboxes(accounts: readonly string[]): number {
    return this.runner.restart(accounts);
  }

  /**
   * Retires the sandbox processes of these accounts because a source or workflow of theirs was deleted: each takes no
   * new task and stops once its runs in flight are done (none run again). Returns how many processes were retired.
   */
  retireSandboxes(accounts: readonly string[]): number {
    return this.runner.retire(accounts);
  }

  /**
   * Reads a component's definition. Returns `error` for code that does not bundle, install or load, and a CancelledError
   * once `options.signal` is aborted (the code never runs, or its worker or sandbox process is stopped).
   */
  async describe(code: string, options: DescribeOptions): Promise<DescribeResult> {
    const deadline = Date.now() + options.timeoutMs;
    let prepared: PreparedComponent;
    try {
      const fetchText = options.fetchText ?? this.fetchText;
      prepared = await withDeadline(
        this.preparer.prepare({ code, baseUrl: options.baseUrl, fetchText, admitInstall: options.admitInstall }),
        options.timeoutMs,
        `reading the component timed out after ${options.timeoutMs} ms (bundling and installing its dependencies)`,
        options.signal,
      );
    } catch (e) {
      const refused = e instanceof InstallRefusedError ? { retryAfterSeconds: e.retryAfterSeconds } : {};
      return { error: { ...err((e as Error).name || 'Error', (e as Error).message), ...refused } };
    }
    const timeoutMs = Math.max(1, deadline - Date.now());
    const task: WorkerDescribeTask = { kind: 'describe', bundle: prepared.ref, timeoutMs };
    const out = await this.runner.run<DescribeResult>(options.account ?? NO_ACCOUNT, task, timeoutMs, undefined, options.signal);
    if ('failed' in out) return { error: out.failed };
    const result: DescribeResult = { ...out.value, dependencyVersions: prepared.versions };
    if (result.descriptor) result.descriptor.dependencies = prepared.dependencies;
    if (prepared.fetchedModules > 0) result.bundle = prepared.bundle;
    return result;
  }

  /** Runs `run` or a hook. `onResponse` gets `respond()`'s payload as soon as it is called. */
  async execute(task: ExecuteTask, options: ExecuteOptions = {}): Promise<ExecuteResult> {
    const started = performance.now();
    const fail = (e: SandboxError): ExecuteResult => ({ emits: [], dbWrites: {}, logs: [], error: e, durationMs: performance.now() - started });
    let prepared: PreparedComponent;
    try {
      const key = prepareKey({ code: task.code, codeHash: task.codeHash, dependencyVersions: task.dependencyVersions });
      prepared = await this.preparer.prepare({ code: task.code, fetchText: this.fetchText, dependencyVersions: task.dependencyVersions }, key);
    } catch (e) {
      return fail(err((e as Error).name || 'Error', (e as Error).message));
    }
    const wt: WorkerExecuteTask = {
      kind: 'execute',
      bundle: prepared.ref,
      sourceId: task.sourceId,
      invocationId: task.invocationId,
      method: task.method,
      props: task.props,
      db: task.db,
      event: task.event,
      ...(task.steps ? { steps: task.steps } : {}),
      ...(task.responded ? { responded: true } : {}),
      endpointUrl: task.endpointUrl,
      timeoutMs: task.timeoutMs,
      limits: task.limits,
    };
    let delivered = false;
    const deliver = (raw: HttpResponsePayload) => {
      const r = checkedResponse(raw);
      if (delivered || !options.onResponse || !r) return;
      delivered = true;
      try {
        options.onResponse(r);
      } catch (e) {
        this.logger?.error({ err: (e as Error).message, source_id: task.sourceId }, 'onResponse callback failed');
      }
    };
    const onMessage = options.onResponse ? (m: ResponseMessage) => !('i' in m) && deliver(m) : undefined;
    const out = await this.runner.run<ExecuteResult>(task.account ?? NO_ACCOUNT, wt, task.timeoutMs, onMessage);
    if ('failed' in out) return fail(out.failed);
    const result = await checkedExecuteResult(out.value, task.limits);
    if (result.response) deliver(result.response);
    return result;
  }

  /**
   * Runs several invocations of one source's `run` as one task, one after the
   * other (see ExecuteBatchTask). `onResponse(i, r)` gets item `i`'s `respond()`
   * payload as soon as it is called.
   */
  async executeBatch(task: ExecuteBatchTask, options: ExecuteBatchOptions = {}): Promise<ExecuteBatchOutcome> {
    const { onResponse } = options;
    const out = await this.executeBatches([task], onResponse ? { onResponse: (_, i, r) => onResponse(i, r) } : {});
    return 'failed' in out ? out : { results: out.results[0] };
  }

  /**
   * Runs the batches of several sources of one account running the same code (account, code and
   * dependencyVersions of the first) as one task: each batch as `executeBatch` runs it, the batches side by side.
   * `onResponse(b, i, r)` gets item `i` of batch `b`'s `respond()` payload as soon as it is called. Failed as a
   * whole (its sandbox died, its answer was too large) the outcome says so for all of them.
   */
  async executeBatches(tasks: ExecuteBatchTask[], options: ExecuteBatchesOptions = {}): Promise<ExecuteBatchesOutcome> {
    const [first] = tasks;
    let prepared: PreparedComponent;
    try {
      const key = prepareKey({ code: first.code, codeHash: first.codeHash, dependencyVersions: first.dependencyVersions });
      prepared = await this.preparer.prepare({ code: first.code, fetchText: this.fetchText, dependencyVersions: first.dependencyVersions }, key);
    } catch (e) {
      return { failed: err((e as Error).name || 'Error', (e as Error).message) };
    }
    const wt: WorkerExecuteBatchTask = {
      kind: 'executeBatch',
      bundle: prepared.ref,
      parts: tasks.map((t) => ({ sourceId: t.sourceId, items: t.items, props: t.props, db: t.db, endpointUrl: t.endpointUrl, timeoutMs: t.timeoutMs, limits: t.limits })),
    };
    // Item i of the task (numbered across the batches) is item `at[i][1]` of batch `at[i][0]`.
    const at = tasks.flatMap((t, b) => t.items.map((_, i) => [b, i] as const));
    const { onResponse } = options;
    const delivered = new Set<number>();
    const deliver = (i: number, raw: HttpResponsePayload) => {
      const r = checkedResponse(raw);
      if (!onResponse || delivered.has(i) || !r || !at[i]) return;
      delivered.add(i);
      try {
        onResponse(at[i][0], at[i][1], r);
      } catch (e) {
        this.logger?.error({ err: (e as Error).message, source_id: tasks[at[i][0]].sourceId }, 'onResponse callback failed');
      }
    };
    const onMessage = onResponse ? (m: ResponseMessage) => 'i' in m && deliver(m.i, m.r) : undefined;
    // Each item has its own deadline inside the worker; a batch may take all of its items', the batches run side by side.
    const timeoutMs = Math.max(...tasks.map((t) => t.timeoutMs * t.items.length));
    const out = await this.runner.run<ExecuteResult[]>(first.account ?? NO_ACCOUNT, wt, timeoutMs, onMessage);
    if ('failed' in out) return out;
    if (!Array.isArray(out.value) || out.value.length !== at.length) return { failed: err('SandboxProtocolError', 'the sandbox answered a batch of runs with something that is not a list of its results') };
    const slicer = new TimeSlicer();
    const results: ExecuteResult[][] = tasks.map(() => []);
    for (let i = 0; i < at.length; i++) results[at[i][0]].push(await checkedExecuteResult(out.value[i], tasks[at[i][0]].limits, slicer));
    results.flat().forEach((r, i) => r.response && deliver(i, r.response));
    return { results };
  }

  /** Calls a prop's async `options({ page, prevContext })` (its own or its app propDefinition's); `signal` cancels it as `describe`'s does. */
  async options(code: string, propName: string, input: OptionsInput, timeoutMs: number, account = NO_ACCOUNT, signal?: AbortSignal): Promise<OptionsResult> {
    const deadline = Date.now() + timeoutMs;
    let prepared: PreparedComponent;
    try {
      prepared = await withDeadline(this.preparer.prepare({ code, fetchText: this.fetchText }), timeoutMs, `options() timed out after ${timeoutMs} ms`, signal);
    } catch (e) {
      return { error: err((e as Error).name || 'Error', (e as Error).message) };
    }
    const left = Math.max(1, deadline - Date.now());
    const task: WorkerOptionsTask = { kind: 'options', bundle: prepared.ref, propName, input, timeoutMs: left, maxBytes: OPTIONS_MAX_BYTES };
    const out = await this.runner.run<OptionsResult>(account, task, left, undefined, signal);
    return 'failed' in out ? { error: out.failed } : out.value;
  }

  /**
   * Calls the component's `additionalProps(previousPropDefs)` with the static props' values as `this`;
   * `previousProps` are the props it added last time (after the static ones in `previousPropDefs`); `signal` cancels it
   * as `describe`'s does.
   */
  async additionalProps(code: string, configuredProps: Record<string, unknown>, timeoutMs: number, account = NO_ACCOUNT, previousProps: PreviousProp[] = [], signal?: AbortSignal): Promise<AdditionalPropsResult> {
    const deadline = Date.now() + timeoutMs;
    let prepared: PreparedComponent;
    try {
      prepared = await withDeadline(this.preparer.prepare({ code, fetchText: this.fetchText }), timeoutMs, `additionalProps() timed out after ${timeoutMs} ms`, signal);
    } catch (e) {
      return { error: err((e as Error).name || 'Error', (e as Error).message) };
    }
    const left = Math.max(1, deadline - Date.now());
    const task: WorkerAdditionalPropsTask = { kind: 'additionalProps', bundle: prepared.ref, configuredProps, previousProps, timeoutMs: left, maxProps: ADDITIONAL_PROPS_MAX_COUNT, maxBytes: ADDITIONAL_PROPS_MAX_BYTES };
    const out = await this.runner.run<AdditionalPropsResult>(account, task, left, undefined, signal);
    return 'failed' in out ? { error: out.failed } : out.value;
  }

  /**
   * Stops the pool: queued tasks fail at once, running ones get `graceMs` to
   * finish, then the workers (and sandbox processes) are stopped.
   */
  close(graceMs = 2000): Promise<void> {
    return this.runner.close(graceMs);
  }
}
