import { MessageChannel, type TransferListItem } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { defaultFetchText } from './bundler';
import { ComponentPreparer, prepareKey, type PreparedComponent } from './preparer';
import type {
  DescribeOptions,
  DescribeResult,
  ExecuteOptions,
  ExecuteResult,
  ExecuteTask,
  FetchText,
  HttpResponsePayload,
  OptionsInput,
  OptionsResult,
  SandboxError,
  SandboxLogger,
  SandboxPoolOptions,
  SandboxPoolStats,
} from './types';
import { resolveWorkerFile } from './worker-file';
import type { WorkerData, WorkerDescribeTask, WorkerExecuteTask, WorkerOptionsTask, WorkerTask } from './worker-protocol';

/** Extra time past a task's own timeout before its worker is terminated (the in-worker timers fire first). */
const GRACE_MS = 1000;
/** Tasks in flight whose start time is tracked (more are timed from submission). */
const START_SLOTS = 65_536;

function err(name: string, message: string): SandboxError {
  return { name, message };
}

function withDeadline<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(message), { name: 'TimeoutError' })), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/**
 * Runs component code in a Piscina pool of worker threads: reading a
 * component (`describe`), running its `run`/hooks (`execute`) and its async
 * prop `options()`. Never throws for anything the component does: failures
 * come back as `error` in the result. Worker threads and `vm` protect the
 * platform from buggy code; they are not a security boundary.
 */
export class SandboxPool {
  private readonly piscina: Piscina;
  private readonly preparer: ComponentPreparer;
  private readonly logger?: SandboxLogger;
  private readonly opts: SandboxPoolOptions;
  private closed = false;
  private closing: Promise<void> = Promise.resolve();
  /** When each task in flight was started by a worker (epoch ms; 0 = still queued), shared with the workers. */
  private readonly startTable: BigInt64Array;
  private readonly freeSlots: number[];
  /** Bundles that hung a worker (bounded): their tasks run under vm's timeout in 'adaptive' mode. */
  private readonly guarded = new Set<string>();
  private readonly fetchText: FetchText;

  constructor(opts: SandboxPoolOptions) {
    this.opts = opts;
    this.logger = opts.logger;
    this.fetchText = opts.fetchText ?? defaultFetchText();
    const threads = Math.max(1, Math.floor(opts.threads));
    const concurrentTasks = Math.max(1, Math.floor(opts.concurrentTasksPerWorker ?? 1));
    const vmTimeout = opts.vmTimeout === false ? 'never' : opts.vmTimeout === true || opts.vmTimeout === undefined ? 'always' : opts.vmTimeout;
    const startBuffer = new SharedArrayBuffer(8 * START_SLOTS);
    this.startTable = new BigInt64Array(startBuffer);
    this.freeSlots = Array.from({ length: START_SLOTS }, (_, i) => START_SLOTS - 1 - i);
    const workerData: WorkerData = { platformRequireFrom: __filename, vmTimeout, heapMb: opts.heapMb, startTable: startBuffer };
    this.piscina = new Piscina({
      filename: resolveWorkerFile(),
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: Number.MAX_SAFE_INTEGER,
      concurrentTasksPerWorker: concurrentTasks,
      resourceLimits: { maxOldGenerationSizeMb: opts.heapMb },
      env: {},
      workerData,
    });
    this.piscina.on('error', (e: Error) => this.logger?.error({ err: e.message }, 'sandbox worker error'));
    this.preparer = new ComponentPreparer({
      npmCacheDir: opts.npmCacheDir,
      npmRegistry: opts.npmRegistry,
      installTimeoutMs: opts.installTimeoutMs ?? 300_000,
      logger: opts.logger,
    });
  }

  /** Tasks waiting for a worker. */
  get queueSize(): number {
    return this.piscina.queueSize;
  }

  /** Figures for metrics: live worker threads, queued tasks, tasks completed, utilization (0–1) since start. */
  stats(): SandboxPoolStats {
    return {
      threads: this.piscina.threads.length,
      queueSize: this.piscina.queueSize,
      completed: this.piscina.completed,
      utilization: this.piscina.utilization,
      guardedBundles: this.guarded.size,
    };
  }

  /** Reads a component's definition. Returns `error` for code that does not bundle, install or load. */
  async describe(code: string, options: DescribeOptions): Promise<DescribeResult> {
    const deadline = Date.now() + options.timeoutMs;
    let prepared: PreparedComponent;
    try {
      const fetchText = options.fetchText ?? this.fetchText;
      prepared = await withDeadline(
        this.preparer.prepare({ code, baseUrl: options.baseUrl, fetchText }),
        options.timeoutMs,
        `reading the component timed out after ${options.timeoutMs} ms (bundling and installing its dependencies)`,
      );
    } catch (e) {
      return { error: err((e as Error).name || 'Error', (e as Error).message) };
    }
    const timeoutMs = Math.max(1, deadline - Date.now());
    const task: WorkerDescribeTask = { kind: 'describe', bundle: prepared.ref, timeoutMs };
    const out = await this.runTask<DescribeResult>(task, timeoutMs);
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
      endpointUrl: task.endpointUrl,
      timeoutMs: task.timeoutMs,
      limits: task.limits,
    };
    let delivered = false;
    const deliver = (r: HttpResponsePayload) => {
      if (delivered || !options.onResponse) return;
      delivered = true;
      try {
        options.onResponse(r);
      } catch (e) {
        this.logger?.error({ err: (e as Error).message, source_id: task.sourceId }, 'onResponse callback failed');
      }
    };
    let channel: MessageChannel | undefined;
    if (options.onResponse) {
      channel = new MessageChannel();
      channel.port1.on('message', deliver);
      wt.port = channel.port2;
    }
    try {
      const out = await this.runTask<ExecuteResult>(wt, task.timeoutMs, channel ? [channel.port2] : undefined);
      if ('failed' in out) return fail(out.failed);
      if (out.value.response) deliver(out.value.response);
      return out.value;
    } finally {
      channel?.port1.close();
    }
  }

  /** Calls a prop's async `options({ page, prevContext })` (its own or its app propDefinition's). */
  async options(code: string, propName: string, input: OptionsInput, timeoutMs: number): Promise<OptionsResult> {
    const deadline = Date.now() + timeoutMs;
    let prepared: PreparedComponent;
    try {
      prepared = await withDeadline(this.preparer.prepare({ code, fetchText: this.fetchText }), timeoutMs, `options() timed out after ${timeoutMs} ms`);
    } catch (e) {
      return { error: err((e as Error).name || 'Error', (e as Error).message) };
    }
    const left = Math.max(1, deadline - Date.now());
    const task: WorkerOptionsTask = { kind: 'options', bundle: prepared.ref, propName, input, timeoutMs: left };
    const out = await this.runTask<OptionsResult>(task, left);
    return 'failed' in out ? { error: out.failed } : out.value;
  }

  /**
   * Stops the pool: queued tasks fail at once, running ones get `graceMs` to
   * finish, then the workers are terminated (their tasks fail with PoolClosedError).
   */
  async close(graceMs = 2000): Promise<void> {
    if (this.closed) return this.closing;
    this.closed = true;
    this.closing = (async () => {
      let timer: NodeJS.Timeout | undefined;
      const graceful = this.piscina.close({ force: true }).then(() => true);
      const timeout = new Promise<false>((r) => {
        timer = setTimeout(() => r(false), graceMs);
      });
      const done = await Promise.race([graceful, timeout]);
      clearTimeout(timer);
      if (!done) await this.piscina.destroy();
    })();
    return this.closing;
  }

  /**
   * Runs one worker task. A task that overruns its deadline (counted from when a
   * worker started it, not while it waited in the queue) is aborted: Piscina
   * terminates its worker and starts a new one.
   */
  private async runTask<T>(task: WorkerTask, timeoutMs: number, transferList?: TransferListItem[]): Promise<{ value: T } | { failed: SandboxError }> {
    if (this.closed) return { failed: err('PoolClosedError', 'the sandbox pool is closed') };
    const ac = new AbortController();
    const slot = this.freeSlots.pop();
    if (slot !== undefined) {
      Atomics.store(this.startTable, slot, 0n);
      task.startSlot = slot;
    }
    if (this.guarded.size && this.guarded.has(task.bundle.key)) task.guard = true;
    const submitted = Date.now();
    let timer: NodeJS.Timeout;
    const check = () => {
      const at = slot === undefined ? submitted : Number(Atomics.load(this.startTable, slot));
      if (at === 0) {
        timer = setTimeout(check, Math.min(1000, timeoutMs));
        return;
      }
      const due = at + timeoutMs + GRACE_MS - Date.now();
      if (due <= 0) ac.abort();
      else timer = setTimeout(check, due);
    };
    timer = setTimeout(check, timeoutMs + GRACE_MS);
    try {
      const value = (await this.piscina.run(task, { signal: ac.signal, transferList: transferList as never })) as T;
      return { value };
    } catch (e) {
      return { failed: this.workerFailure(e, task, timeoutMs, ac.signal.aborted) };
    } finally {
      clearTimeout(timer!);
      if (slot !== undefined) this.freeSlots.push(slot);
    }
  }

  private workerFailure(e: unknown, task: WorkerTask, timeoutMs: number, aborted: boolean): SandboxError {
    const error = e as NodeJS.ErrnoException;
    const what = task.kind === 'execute' ? task.method : task.kind;
    if (aborted) {
      if (this.guarded.size >= 10_000) this.guarded.clear();
      this.guarded.add(task.bundle.key);
      this.logger?.warn({ task: task.kind, timeout_ms: timeoutMs }, 'sandbox task overran its deadline; worker terminated');
      return err('TimeoutError', `${what} timed out after ${timeoutMs} ms (its worker was stopped)`);
    }
    if (error?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
      this.logger?.warn({ task: task.kind, heap_mb: this.opts.heapMb }, 'sandbox worker ran out of memory; replaced');
      return err('MemoryLimitError', `${what} exceeded the memory limit (${this.opts.heapMb} MB heap per worker); the worker was restarted`);
    }
    if (this.closed) return err('PoolClosedError', 'the sandbox pool is closed');
    this.logger?.error({ task: task.kind, err: error?.message }, 'sandbox worker failed');
    return err('WorkerError', `the worker running ${what} failed: ${error?.message ?? String(e)}`);
  }
}
