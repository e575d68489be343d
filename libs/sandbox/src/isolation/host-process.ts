import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { SandboxError, SandboxLogger } from '../types';
import { sandboxError, type TaskOutcome } from '../worker-pool';
import type { ResponseMessage, WorkerTask } from '../worker-protocol';
import type { FromHost, ToHost } from './host-protocol';
import { IpcBatch } from './ipc-batch';
import { treeRssBytes } from './process-memory';

const START_TIMEOUT_MS = 30_000;
const MEMORY_CHECK_MS = 100;
const STDERR_KEEP = 4096;

interface Pending {
  resolve: (out: TaskOutcome<unknown>) => void;
  onResponse?: (r: ResponseMessage) => void;
  what: string;
}

export interface HostProcessOptions {
  account: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  memoryMb: number;
  logger?: SandboxLogger;
}

const signalName = (n: number): string => Object.entries(constants.signals).find(([, v]) => v === n)?.[0] ?? `signal ${n}`;

/**
 * One account's sandbox host process, seen from the app: tasks go in over IPC,
 * results come back; its resident memory (all its processes) is checked every
 * 100 ms against the account's limit. When it dies, however it dies, the tasks
 * it was running fail with an error that says what happened; the app goes on.
 */
export class HostProcess {
  private child: ChildProcess | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private ready!: Promise<void>;
  private watchdog: NodeJS.Timeout | undefined;
  private stopReason: SandboxError | undefined;
  private stderr = '';
  /** Tasks to the host, one write per turn of the event loop; a failed write fails the tasks it carried. */
  private readonly out = new IpcBatch<ToHost>((batch) => {
    if (!this.child?.connected) return this.failSent(batch, 'the sandbox process is gone');
    this.child.send(batch, (e) => e && this.failSent(batch, e.message));
  });
  exited = false;
  lastUsedMs = Date.now();
  onExit: () => void = () => undefined;

  constructor(private readonly opts: HostProcessOptions) {}

  get inFlight(): number {
    return this.pending.size;
  }

  start(): void {
    const child = spawn(this.opts.command, this.opts.args, { env: this.opts.env, stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'advanced' });
    this.child = child;
    child.stderr?.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString('utf8')).slice(-STDERR_KEEP);
    });
    this.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the sandbox process did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      child.on('message', (batch: FromHost[]) => {
        for (const m of batch) {
          if (m.t === 'ready') {
            clearTimeout(timer);
            resolve();
          } else this.onMessage(m);
        }
      });
      child.once('exit', () => {
        clearTimeout(timer);
        reject(new Error(`the sandbox process could not start: ${this.stderr.trim().slice(-1000) || 'no output'}`));
      });
    });
    this.ready.catch(() => undefined);
    child.once('exit', (code, signal) => this.exit(code, signal));
    child.on('error', (e) => this.opts.logger?.error({ account: this.opts.account, err: e.message }, 'sandbox process error'));
    this.watchdog = setInterval(() => this.checkMemory(), MEMORY_CHECK_MS);
    this.watchdog.unref();
  }

  async run<T>(task: WorkerTask, timeoutMs: number, onResponse?: (r: ResponseMessage) => void): Promise<TaskOutcome<T>> {
    const what = task.kind === 'execute' ? task.method : task.kind === 'executeBatch' ? 'run' : task.kind;
    try {
      await this.ready;
    } catch (e) {
      return { failed: sandboxError('SandboxStartError', (e as Error).message) };
    }
    if (this.exited || !this.child?.connected) return { failed: this.deathError(what, null, null) };
    this.lastUsedMs = Date.now();
    const id = this.nextId++;
    return new Promise<TaskOutcome<T>>((resolve) => {
      this.pending.set(id, { resolve: resolve as (o: TaskOutcome<unknown>) => void, onResponse, what });
      this.out.push({ t: 'run', id, task, timeoutMs, respond: !!onResponse });
    });
  }

  /** Stops the process: running tasks get `graceMs`, then it is killed. */
  async close(graceMs = 2000): Promise<void> {
    const child = this.child;
    if (!child || this.exited) return;
    this.stopReason ??= sandboxError('PoolClosedError', 'the sandbox pool is closed');
    const gone = new Promise<void>((r) => child.once('exit', () => r()));
    if (child.connected) child.send([{ t: 'close', graceMs }] satisfies ToHost[], () => undefined);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs + 1000);
    await gone;
    clearTimeout(timer);
  }

  private failSent(batch: ToHost[], why: string): void {
    for (const m of batch) {
      if (m.t !== 'run') continue;
      const p = this.pending.get(m.id);
      if (p && this.pending.delete(m.id)) p.resolve({ failed: sandboxError('SandboxError', `could not hand ${p.what} to the sandbox process: ${why}`) });
    }
  }

  kill(reason: SandboxError): void {
    this.stopReason ??= reason;
    this.child?.kill('SIGKILL');
  }

  private onMessage(m: FromHost): void {
    if (m.t === 'done') {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      this.lastUsedMs = Date.now();
      p.resolve(m.out);
    } else if (m.t === 'response') {
      this.pending.get(m.id)?.onResponse?.(m.payload);
    } else if (m.t === 'log') {
      this.opts.logger?.[m.level]?.({ ...m.obj, account: this.opts.account }, m.msg);
    }
  }

  private checkMemory(): void {
    if (!this.child?.pid || this.exited) return;
    const rss = treeRssBytes(this.child.pid);
    const limit = this.opts.memoryMb * 1024 * 1024;
    if (rss <= limit) return;
    const used = Math.round(rss / 1024 / 1024);
    this.opts.logger?.warn({ account: this.opts.account, rss_mb: used, limit_mb: this.opts.memoryMb }, 'sandbox process over its memory limit: stopped');
    this.kill(sandboxError('MemoryLimitError', `the account's sandbox process used ${used} MiB, over its memory limit of ${this.opts.memoryMb} MiB (SANDBOX_MEMORY_MB); it was stopped`));
  }

  private deathError(what: string, code: number | null, signal: NodeJS.Signals | null): SandboxError {
    const how = signal ? `was killed (${signal})` : code !== null && code > 128 ? `was killed (${signalName(code - 128)})` : `exited (code ${code ?? 'unknown'})`;
    return sandboxError('SandboxCrashError', `the account's sandbox process ${how} while running ${what}; it is started again for the next run`);
  }

  private exit(code: number | null, signal: NodeJS.Signals | null): void {
    this.exited = true;
    if (this.watchdog) clearInterval(this.watchdog);
    const pending = [...this.pending.values()];
    this.pending.clear();
    if (!this.stopReason && pending.length) {
      this.opts.logger?.warn({ account: this.opts.account, code, signal, stderr: this.stderr.slice(-500) }, 'sandbox process died');
    }
    for (const p of pending) p.resolve({ failed: this.stopReason ? { ...this.stopReason } : this.deathError(p.what, code, signal) });
    this.onExit();
  }
}
