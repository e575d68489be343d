import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { SandboxError, SandboxLogger, SandboxPoolStats } from './types';
import { resolveWorkerFile } from './worker-file';
import type { ResponseMessage, WorkerData, WorkerTask } from './worker-protocol';

/** Extra time past a task's own timeout before its worker is terminated (the in-worker timers fire first). */
const GRACE_MS = 1000;
/** Tasks in flight whose start time is tracked (more are timed from submission). */
const START_SLOTS = 65_536;
/**
 * How long after its hand-over to Piscina a task may take to start (a worker being started or replaced).
 * Tasks are handed over only when a worker has room, so they start at once or after a worker's start-up;
 * the start a worker reports is believed only within this window (see `run`).
 */
const START_WINDOW_MS = 5000;

export interface WorkerPoolOptions {
  threads: number;
  heapMb: number;
  vmTimeout: 'always' | 'adaptive' | 'never';
  concurrentTasksPerWorker: number;
  logger?: SandboxLogger;
  /** Unix socket of the egress proxy: set when component code runs in an isolated sandbox process. */
  egressSocket?: string;
  /** The Piscina worker script (default: resolved beside this file). */
  workerFile?: string;
  /** A file inside the project: `@pipedream/platform` is resolved from here when a component does not install it. */
  platformRequireFrom?: string;
  /** Start workers beyond the first on use and stop them when idle for this long (default: keep them all). */
  idleTimeoutMs?: number;
}

export type TaskOutcome<T> = { value: T } | { failed: SandboxError };

export const sandboxError = (name: string, message: string): SandboxError => ({ name, message });

/** How a task fails when its caller cancelled it (its `signal`): it was not started, or its worker (or sandbox process) was stopped. */
export const CANCELLED = 'CancelledError';
export const cancelledError = (): SandboxError => sandboxError(CANCELLED, 'the task was cancelled by its caller');

/**
 * The Piscina pool of worker threads that load and run component bundles.
 * A task that overruns its deadline (counted from when a worker started it, not
 * while it waited in the queue) is aborted: Piscina terminates its worker and
 * starts a new one.
 */
export class WorkerPool {
  private readonly piscina: Piscina;
  private closed = false;
  private closing: Promise<void> = Promise.resolve();
  /** When each task in flight was started by a worker (epoch ms; 0 = still queued), shared with the workers. */
  private readonly startTable: BigInt64Array;
  private readonly freeSlots: number[];
  /** Bundles that hung a worker (bounded): their tasks run under vm's timeout in 'adaptive' mode. */
  private readonly guarded = new Set<string>();
  /** Tasks handed to Piscina and not finished; at most `capacity`, the rest wait in `waiting` (this thread's own queue). */
  private running = 0;
  private readonly capacity: number;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly opts: WorkerPoolOptions) {
    const threads = Math.max(1, Math.floor(opts.threads));
    this.capacity = threads * Math.max(1, Math.floor(opts.concurrentTasksPerWorker));
    const startBuffer = new SharedArrayBuffer(8 * START_SLOTS);
    this.startTable = new BigInt64Array(startBuffer);
    this.freeSlots = Array.from({ length: START_SLOTS }, (_, i) => START_SLOTS - 1 - i);
    const workerData: WorkerData = { platformRequireFrom: opts.platformRequireFrom ?? __filename, vmTimeout: opts.vmTimeout, heapMb: opts.heapMb, startTable: startBuffer, egressSocket: opts.egressSocket };
    this.piscina = new Piscina({
      filename: opts.workerFile ?? resolveWorkerFile(),
      // At least one: Piscina replaces a terminated worker only up to minThreads, so with none a task queued
      // behind tasks whose workers were stopped (endless loops) would wait until another task came along.
      minThreads: opts.idleTimeoutMs ? 1 : threads,
      maxThreads: threads,
      idleTimeout: opts.idleTimeoutMs ?? Number.MAX_SAFE_INTEGER,
      concurrentTasksPerWorker: Math.max(1, Math.floor(opts.concurrentTasksPerWorker)),
      resourceLimits: { maxOldGenerationSizeMb: opts.heapMb },
      env: {},
      workerData,
    });
    this.piscina.on('error', (e: Error) => opts.logger?.error({ err: e.message }, 'sandbox worker error'));
  }

  stats(): SandboxPoolStats {
    return {
      threads: this.piscina.threads.length,
      queueSize: this.piscina.queueSize + this.waiting.length,
      completed: this.piscina.completed,
      utilization: this.piscina.utilization,
      guardedBundles: this.guarded.size,
    };
  }

  /**
   * Runs one worker task; `onResponse` receives an execute task's `respond()` payload as soon as it is called. Once
   * `signal` is aborted the task fails with CANCELLED at once: waiting, it never starts; running, its worker is terminated.
   */
  async run<T>(task: WorkerTask, timeoutMs: number, onResponse?: (r: ResponseMessage) => void, signal?: AbortSignal): Promise<TaskOutcome<T>> {
    if (this.closed) return { failed: sandboxError('PoolClosedError', 'the sandbox pool is closed') };
    if (signal?.aborted) return { failed: cancelledError() };
    if (!(await this.admit(signal))) return { failed: cancelledError() };
    try {
      if (this.closed) return { failed: sandboxError('PoolClosedError', 'the sandbox pool is closed') };
      if (signal?.aborted) return { failed: cancelledError() };
      return await this.runAdmitted<T>(task, timeoutMs, onResponse, signal);
    } finally {
      this.release();
    }
  }

  /**
   * Waits until a worker has room for one more task (this thread's queue: Piscina's would hide when a task starts).
   * False when `signal` was aborted meanwhile: the task left the queue without a place.
   */
  private admit(signal?: AbortSignal): Promise<boolean> {
    if (this.running < this.capacity) {
      this.running++;
      return Promise.resolve(true);
    }
    // The releasing task hands its place over (`running` stays as it is).
    return new Promise<boolean>((resolve) => {
      const go = (): void => {
        signal?.removeEventListener('abort', leave);
        resolve(true);
      };
      const leave = (): void => {
        const i = this.waiting.indexOf(go);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(false);
      };
      signal?.addEventListener('abort', leave, { once: true });
      this.waiting.push(go);
    });
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }

  private async runAdmitted<T>(task: WorkerTask, timeoutMs: number, onResponse?: (r: ResponseMessage) => void, signal?: AbortSignal): Promise<TaskOutcome<T>> {
    let channel: MessageChannel | undefined;
    if (onResponse && (task.kind === 'execute' || task.kind === 'executeBatch')) {
      channel = new MessageChannel();
      channel.port1.on('message', onResponse);
      task.port = channel.port2;
    }
    const ac = new AbortController();
    const slot = this.freeSlots.pop();
    if (slot !== undefined) {
      Atomics.store(this.startTable, slot, 0n);
      task.startSlot = slot;
    }
    if (this.guarded.size && this.guarded.has(task.bundle.key)) task.guard = true;
    const submitted = Date.now();
    let timer: NodeJS.Timeout;
    // The worker writes when it starts the task into the shared table, but component code in any worker can write
    // any slot (0 = "still queued" forever, or a start far ahead: a run then never timed out and held its worker
    // for good). The task was handed over with a worker free for it, so it started between its hand-over and the
    // end of START_WINDOW_MS: the reported start is believed only within that window.
    const latest = submitted + START_WINDOW_MS;
    const check = () => {
      const reported = slot === undefined ? submitted : Number(Atomics.load(this.startTable, slot));
      if (reported === 0 && Date.now() < latest) {
        timer = setTimeout(check, Math.max(1, Math.min(1000, timeoutMs, latest - Date.now())));
        return;
      }
      const at = reported === 0 ? latest : Math.min(Math.max(reported, submitted), latest);
      const due = at + timeoutMs + GRACE_MS - Date.now();
      if (due <= 0) ac.abort();
      else timer = setTimeout(check, due);
    };
    timer = setTimeout(check, timeoutMs + GRACE_MS);
    // Cancelled by its caller: Piscina terminates the worker running it, as for an overrun (not blamed on its bundle).
    let cancelled = false;
    const cancel = (): void => {
      cancelled = true;
      ac.abort();
    };
    signal?.addEventListener('abort', cancel, { once: true });
    try {
      const value = (await this.piscina.run(task, { signal: ac.signal, transferList: channel ? ([channel.port2] as never) : undefined })) as T;
      return { value };
    } catch (e) {
      if (cancelled) return { failed: cancelledError() };
      return { failed: this.workerFailure(e, task, timeoutMs, ac.signal.aborted) };
    } finally {
      signal?.removeEventListener('abort', cancel);
      clearTimeout(timer!);
      if (slot !== undefined) this.freeSlots.push(slot);
      if (channel) {
        // The result may arrive before the port's message event: answers already posted are taken now, not dropped with the port.
        for (let m = receiveMessageOnPort(channel.port1); m; m = receiveMessageOnPort(channel.port1)) onResponse!(m.message as ResponseMessage);
        channel.port1.close();
      }
    }
  }

  /**
   * Stops the pool: queued tasks fail at once, running ones get `graceMs` to
   * finish, then the workers are terminated (their tasks fail with PoolClosedError).
   */
  async close(graceMs = 2000): Promise<void> {
    if (this.closed) return this.closing;
    this.closed = true;
    // Tasks waiting for a worker fail at once (each finds the pool closed when admitted).
    for (const next of this.waiting.splice(0)) next();
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

  private workerFailure(e: unknown, task: WorkerTask, timeoutMs: number, aborted: boolean): SandboxError {
    const error = e as NodeJS.ErrnoException;
    const what = task.kind === 'execute' ? task.method : task.kind === 'executeBatch' ? 'run' : task.kind;
    const log = this.opts.logger;
    if (aborted) {
      if (this.guarded.size >= 10_000) this.guarded.clear();
      this.guarded.add(task.bundle.key);
      log?.warn({ task: task.kind, timeout_ms: timeoutMs }, 'sandbox task overran its deadline; worker terminated');
      return sandboxError('TimeoutError', `${what} timed out after ${timeoutMs} ms (its worker was stopped)`);
    }
    if (error?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
      log?.warn({ task: task.kind, heap_mb: this.opts.heapMb }, 'sandbox worker ran out of memory; replaced');
      return sandboxError('MemoryLimitError', `${what} exceeded the memory limit (${this.opts.heapMb} MB heap per worker); the worker was restarted`);
    }
    if (this.closed) return sandboxError('PoolClosedError', 'the sandbox pool is closed');
    log?.error({ task: task.kind, err: error?.message }, 'sandbox worker failed');
    return sandboxError('WorkerError', `the worker running ${what} failed: ${error?.message ?? String(e)}`);
  }
}
