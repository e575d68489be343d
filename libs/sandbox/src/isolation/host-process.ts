import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Socket } from 'node:net';
import type { SandboxError, SandboxLogger } from '../types';
import { sandboxError, type TaskOutcome } from '../worker-pool';
import type { ResponseMessage, WorkerTask } from '../worker-protocol';
import { encodeFrames, FrameReader, type FrameError } from './frame-channel';
import type { FromHost, ToHost } from './host-protocol';
import { IpcBatch } from './ipc-batch';
import { FRAME_ENVELOPE_BYTES, checkedFromHost, frameCapBytes } from './host-messages';
import { RESULT_MAX_BYTES } from './result-bounds';
import { treeRssBytes } from './process-memory';

const START_TIMEOUT_MS = 30_000;
const MEMORY_CHECK_MS = 100;
const STDERR_KEEP = 4096;
/** Log lines a sandbox host may send per window (more are dropped). */
const LOG_WINDOW_MS = 10_000;
const LOG_LINES_PER_WINDOW = 100;

interface Pending {
  resolve: (out: TaskOutcome<unknown>) => void;
  onResponse?: (r: ResponseMessage) => void;
  what: string;
  task: WorkerTask;
  /** `response` messages seen for this task. */
  responses?: number;
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
  /** The channel to the host (its fd 3): framed messages, read as untrusted input (frame-channel.ts). */
  private channel: Socket | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private ready!: Promise<void>;
  private watchdog: NodeJS.Timeout | undefined;
  private stopReason: SandboxError | undefined;
  private stderr = '';
  private logWindow = { startMs: 0, lines: 0 };
  /** Tasks to the host, one write per turn of the event loop; a failed write fails the tasks it carried. */
  private readonly out = new IpcBatch<ToHost>((batch) => {
    if (!this.channel?.writable) return this.failSent(batch, 'the sandbox process is gone');
    this.channel.write(encodeFrames(batch), (e) => e && this.failSent(batch, e.message));
  });
  exited = false;
  lastUsedMs = Date.now();
  onExit: () => void = () => undefined;

  constructor(private readonly opts: HostProcessOptions) {}

  get inFlight(): number {
    return this.pending.size;
  }

  start(): void {
    // Not Node's IPC channel ('ipc'): its reader trusts the length a frame announces (see frame-channel.ts).
    const child = spawn(this.opts.command, this.opts.args, { env: this.opts.env, stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
    this.child = child;
    const channel = child.stdio[3] as Socket;
    this.channel = channel;
    channel.on('error', () => undefined);
    child.stderr?.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString('utf8')).slice(-STDERR_KEEP);
    });
    this.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the sandbox process did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      const reader = new FrameReader(
        () => this.frameCap(),
        (raw, bytes) => {
          const m = checkedFromHost(raw);
          if (typeof m === 'string') return this.violation(m);
          if (m.t === 'ready') {
            clearTimeout(timer);
            resolve();
          } else this.onMessage(m, bytes);
        },
        (e: FrameError) => this.violation(e.message),
      );
      channel.on('data', (d: Buffer) => reader.push(d));
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
    if (this.exited || !this.channel?.writable) return { failed: this.deathError(what, null, null) };
    this.lastUsedMs = Date.now();
    const id = this.nextId++;
    return new Promise<TaskOutcome<T>>((resolve) => {
      this.pending.set(id, { resolve: resolve as (o: TaskOutcome<unknown>) => void, onResponse, what, task });
      this.out.push({ t: 'run', id, task, timeoutMs, respond: !!onResponse });
    });
  }

  /** Stops the process: running tasks get `graceMs`, then it is killed. */
  async close(graceMs = 2000): Promise<void> {
    const child = this.child;
    if (!child || this.exited) return;
    this.stopReason ??= sandboxError('PoolClosedError', 'the sandbox pool is closed');
    const gone = new Promise<void>((r) => child.once('exit', () => r()));
    if (this.channel?.writable) this.channel.write(encodeFrames([{ t: 'close', graceMs }] satisfies ToHost[]), () => undefined);
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

  /**
   * The largest frame the host may send now: the largest answer one of its tasks in flight may have
   * (result-bounds.ts), plus room for the envelope; a log line or `ready` when none is in flight.
   */
  private frameCap(): number {
    let cap = 0;
    for (const p of this.pending.values()) {
      cap = Math.max(cap, frameCapBytes(p.task));
      // Runs have the largest bound there is: no need to look further (thousands may be in flight).
      if (cap >= RESULT_MAX_BYTES) break;
    }
    return cap + FRAME_ENVELOPE_BYTES;
  }

  /**
   * The host broke the protocol — an oversized or malformed frame, an answer of the wrong size or
   * to no task: code in its worker threads wrote to the channel. Its sandbox is stopped; its tasks fail.
   */
  private violation(why: string): void {
    if (this.exited) return;
    this.opts.logger?.warn({ account: this.opts.account, reason: why }, 'sandbox process broke the channel protocol: stopped');
    this.kill(sandboxError('SandboxProtocolError', `the account's sandbox process broke the protocol of its channel to the app (${why}); it was stopped`));
  }

  private onMessage(m: FromHost, bytes: number): void {
    if (m.t === 'done') {
      const p = this.pending.get(m.id);
      if (!p) return this.violation(`an answer to task ${m.id}, which is not in flight`);
      if (bytes > frameCapBytes(p.task) + FRAME_ENVELOPE_BYTES) return this.violation(`an answer of ${bytes} bytes to a ${p.task.kind} task, over its bound`);
      this.pending.delete(m.id);
      this.lastUsedMs = Date.now();
      p.resolve(m.out);
    } else if (m.t === 'response') {
      // Late ones (after the task's answer) are dropped; more than the task can have are a violation.
      const p = this.pending.get(m.id);
      if (!p) return;
      p.responses = (p.responses ?? 0) + 1;
      const most = p.task.kind === 'executeBatch' ? p.task.items.length : 1;
      if (p.responses > most) return this.violation(`${p.responses} responses to a task that may have ${most}`);
      p.onResponse?.(m.payload);
    } else if (m.t === 'log') {
      if (bytes > FRAME_ENVELOPE_BYTES) return this.violation(`a log line of ${bytes} bytes`);
      // The host logs a few lines per failed task: more are dropped, so the channel cannot flood the app's log.
      const now = Date.now();
      if (now - this.logWindow.startMs >= LOG_WINDOW_MS) this.logWindow = { startMs: now, lines: 0 };
      if (++this.logWindow.lines > LOG_LINES_PER_WINDOW) return;
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
