import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Socket } from 'node:net';
import { RateBudget } from '@app/contracts';
import type { SandboxError, SandboxLogger } from '../types';
import { cancelledError, sandboxError, type TaskOutcome } from '../worker-pool';
import type { ResponseMessage, WorkerTask } from '../worker-protocol';
import { encodeFrame, encodeFrames, FrameReader, type FrameError } from './frame-channel';
import type { FromHost, SandboxRunIn, ToHost } from './host-protocol';
import { IpcBatch } from './ipc-batch';
import { ReadHold } from './read-hold';
import { FRAME_ENVELOPE_BYTES, checkedFromHost, frameCapBytes } from './host-messages';
import { RESULT_MAX_BYTES } from './result-bounds';
import { sandboxTmp, TMP_FILE_BYTES, treeRssBytes } from './process-memory';
import { killTree } from './process-tree';
import { FRAME_MAX_BYTES, PieceAssembly } from './frame-pieces';

const START_TIMEOUT_MS = 30_000;
const MEMORY_CHECK_MS = 100;
const STDERR_KEEP = 4096;
/** Log lines a sandbox host may send per window (more are dropped). */
const LOG_WINDOW_MS = 10_000;
const LOG_LINES_PER_WINDOW = 100;
/** Runs on the process's own thread: how long past its deadline a run may keep the process silent before it is stopped. */
const OVERRUN_GRACE_MS = 1000;
/** How long a dead process's exit waits for the rest of its stderr (which tells a heap exhaustion). */
const STDERR_DRAIN_MS = 1000;
const HEAP_EXHAUSTED = /JavaScript heap out of memory|Reached heap limit/;
/** How long the app reads a sandbox's frames before handing its event loop to other work (frame-pieces.ts). */
const READ_TURN_MS = 5;
/**
 * Frames the app reads of one sandbox a second (after a burst of as many), then it waits at least FRAME_WAIT_MS before
 * the next: their writes wait in the sandbox. Every frame is deserialized and checked on the app's thread, and one
 * sandbox wrote 200,000 small ones a second (log lines, dropped past their budget): another account's source answered a
 * sixth as many requests meanwhile. A run's answer is a frame or two, a large one a frame per 256 KiB.
 */
const FRAMES_PER_SECOND = 10_000;
const FRAME_WAIT_MS = 10;
/**
 * Bytes of a sandbox's stderr the app reads per second; past them it stops reading until the second is over (the
 * sandbox's writes then wait). Node writes little there (a fatal error, a heap exhaustion), but component code can
 * write to the descriptor itself: a loop of writes once held a third of the runner's thread for as long as it ran.
 */
const STDERR_BYTES_PER_SECOND = 64 * 1024;
/**
 * How a run fails when the app stopped its process for a blocked thread without knowing which run blocked it (the
 * app cannot see inside; several were in flight): it may be the culprit as well as a bystander, so the caller runs
 * it again as a suspect (IsolatedRunner).
 */
export const STOPPED_BESIDE = 'SandboxStoppedError';
/**
 * How a run fails when the app restarted its process because the account's access changed (a member removed, keys
 * revoked: IsolatedRunner.restart): nothing of it was kept, and the caller runs it again on the new process.
 */
export const RESTARTED = 'SandboxRestartedError';
/**
 * A retired process (`retire`) is stopped at the latest this long after the deadline of the last of its runs in flight:
 * with workers a run is stopped at most 5 s + its timeout + 1 s after it was handed over (worker-pool.ts).
 */
const RETIRE_GRACE_MS = 6000;
/**
 * How long a process that ended its side of the channel may live on before it is stopped. One that dies ends it too,
 * its exit following within milliseconds, and that exit is reported as itself (a heap exhaustion, a crash).
 */
const CHANNEL_END_GRACE_MS = 1000;

interface Pending {
  resolve: (out: TaskOutcome<unknown>) => void;
  onResponse?: (r: ResponseMessage) => void;
  what: string;
  task: WorkerTask;
  /** `response` messages seen for this task. */
  responses?: number;
  sentAtMs: number;
  timeoutMs: number;
  /** Run again after a stop it may have caused: the caller has no other suspect of this process in flight. */
  suspect: boolean;
  /** Pieces of its next answer (a `response` or the `done`), and their bytes. */
  pieces?: PieceAssembly;
  pieceBytes: number;
}

export interface HostProcessOptions {
  account: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  memoryMb: number;
  /** Size of its /tmp, a tmpfs (SANDBOX_TMP_MB), which tells that tmpfs from the app's own /tmp. */
  tmpMb: number;
  /** Where its runs execute (SANDBOX_RUN_IN): on its own thread, a run that blocks it past its deadline stops the process. */
  runIn: SandboxRunIn;
  /** The heap cap of the process (runs on its own thread) or of each worker thread, for the error that names it. */
  heapMb: number;
  /** A run blocked the process past its deadline (it was stopped). */
  onOverrun?: (task: WorkerTask) => void;
  /** How long to wait before reading more of its answers (read-hold.ts); absent: read on. */
  readPauseMs?: () => number;
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
  /** The frames this sandbox may send (FRAMES_PER_SECOND). */
  private readonly frames = new RateBudget(FRAMES_PER_SECOND, FRAMES_PER_SECOND);
  private nextId = 1;
  private ready!: Promise<void>;
  private watchdog: NodeJS.Timeout | undefined;
  private stopReason: SandboxError | undefined;
  /** Failures of particular tasks when the process stops (the run that blocked it), instead of `stopReason`. */
  private readonly failures = new Map<number, SandboxError>();
  /**
   * When the host last answered a task in flight: a process that answers is not blocked. Only an answer counts, not
   * any bytes or frame: component code can write to the channel itself (fs.writeSync(3, …)) from a thread it blocks,
   * and a run that wrote a log frame every 500 ms while it spun was never timed out. A forged answer settles the task
   * it names (and only the first piece of an answer counts), so it can put the deadlines off only as many times as
   * there are answers due.
   */
  private lastAnswerMs = Date.now();
  private hold: ReadHold | undefined;
  /** The task whose answer is coming in pieces: the host sends one answer's pieces together, so at most one is open. */
  private piecesOf: Pending | undefined;
  private stderr = '';
  /** Takes no new task: stopped once its tasks in flight are done (`retire`). */
  private retired = false;
  private retireTimer: NodeJS.Timeout | undefined;
  private logWindow = { startMs: 0, lines: 0 };
  /**
   * Tasks to the host, one write per turn of the event loop; a failed write fails the tasks it carried. A task that
   * cannot be serialized (a value nested too deeply for `v8.serialize`, such as a step's return value handed to the
   * next step) fails alone: thrown here, outside any task, it took the app process down.
   */
  private readonly out = new IpcBatch<ToHost>((batch) => {
    if (!this.channel?.writable) return this.failSent(batch, 'the sandbox process is gone');
    const sent: ToHost[] = [];
    const frames: Buffer[] = [];
    for (const m of batch) {
      try {
        frames.push(encodeFrame(m));
        sent.push(m);
      } catch (e) {
        this.failSent([m], `it cannot be serialized (${(e as Error).message})`);
      }
    }
    if (sent.length) this.channel.write(Buffer.concat(frames), (e) => e && this.failSent(sent, e.message));
  });
  exited = false;
  lastUsedMs = Date.now();
  /** Resident memory of the process and its descendants at the last check (every MEMORY_CHECK_MS). */
  rssBytes = 0;

  /** Memory the sandbox's /tmp held at the last check, a tmpfs (which `rssBytes` does not count): its files' bytes and their inodes. */
  tmpBytes = 0;
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
    if (this.opts.readPauseMs) this.hold = new ReadHold(channel, this.opts.readPauseMs, () => (this.lastAnswerMs = Date.now()));
    this.readStderr(child);
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
        true,
        {
          afterMs: READ_TURN_MS,
          pause: (resume, waitMs) => {
            channel.pause();
            const go = () => {
              resume();
              if (!reader.waiting && !this.hold?.holding) channel.resume();
            };
            if (waitMs > 0) setTimeout(go, Math.max(waitMs, FRAME_WAIT_MS)).unref();
            else setImmediate(go);
          },
          waitMs: () => this.frames.take('frames', 1),
        },
      );
      channel.on('data', (d: Buffer) => {
        reader.push(d);
        // Waiting for its turn or its budget (a hold that ended may have resumed the channel meanwhile): unread.
        if (reader.waiting) channel.pause();
        this.hold?.check();
      });
      child.once('exit', () => {
        clearTimeout(timer);
        reject(new Error(`the sandbox process could not start: ${this.stderr.trim().slice(-1000) || 'no output'}`));
      });
    });
    this.ready.catch(() => undefined);
    // Component code can close the process's channel (fd 3) and open a file in its place: the process lives on, its
    // answers go into the file, and with worker threads (no deadline kept here) the account's runs waited for good.
    channel.once('end', () => {
      const timer = setTimeout(() => {
        if (!this.stopReason) this.violation('it closed the channel');
      }, CHANNEL_END_GRACE_MS);
      timer.unref();
      child.once('exit', () => clearTimeout(timer));
    });
    // Its exit is handled once its stderr is read to the end (or soon after), which tells a heap exhaustion.
    child.once('exit', (code, signal) => {
      this.exited = true;
      // Whichever comes first; the other is then a no-op (its tasks settled, `onExit` called once).
      const done = (): void => {
        clearTimeout(timer);
        child.off('close', done);
        this.exit(code, signal);
      };
      const timer = setTimeout(done, STDERR_DRAIN_MS);
      child.once('close', done);
    });
    child.on('error', (e) => this.opts.logger?.error({ account: this.opts.account, err: e.message }, 'sandbox process error'));
    this.watchdog = setInterval(() => {
      this.checkMemory();
      if (this.opts.runIn === 'process') this.checkDeadlines();
    }, MEMORY_CHECK_MS);
    this.watchdog.unref();
  }

  /** Keeps the tail of the process's stderr, reading at most STDERR_BYTES_PER_SECOND (all of it once the process exited). */
  private readStderr(child: ChildProcess): void {
    const stderr = child.stderr;
    if (!stderr) return;
    let windowStart = Date.now();
    let bytes = 0;
    let resume: NodeJS.Timeout | undefined;
    stderr.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString('utf8')).slice(-STDERR_KEEP);
      const now = Date.now();
      if (now - windowStart >= 1000) [windowStart, bytes] = [now, 0];
      bytes += d.length;
      if (bytes < STDERR_BYTES_PER_SECOND || this.exited || resume) return;
      stderr.pause();
      resume = setTimeout(() => {
        resume = undefined;
        stderr.resume();
      }, 1000 - (now - windowStart));
      resume.unref();
    });
    child.once('exit', () => {
      clearTimeout(resume);
      stderr.resume();
    });
  }

  /**
   * Runs a task in the process. Once `signal` is aborted it fails with CANCELLED at once: not sent yet, it is not run;
   * in flight, the process is stopped as for a run that blocks it past its deadline (the account's next run starts a
   * new one), and the runs in flight beside it fail with STOPPED_BESIDE (IsolatedRunner runs them again).
   */
  async run<T>(task: WorkerTask, timeoutMs: number, onResponse?: (r: ResponseMessage) => void, suspect = false, signal?: AbortSignal): Promise<TaskOutcome<T>> {
    const what = task.kind === 'execute' ? task.method : task.kind === 'executeBatch' ? 'run' : task.kind;
    if (signal?.aborted) return { failed: cancelledError() };
    let startError: Error | undefined;
    await this.ready.catch((e: Error) => (startError = e));
    // Handed to this process before it was retired, but not sent yet: the caller runs it on the account's next one.
    if (this.retired) return { failed: sandboxError(RESTARTED, `the account's sandbox process was retired before ${what} was sent to it`) };
    if (startError) return { failed: sandboxError('SandboxStartError', startError.message) };
    if (signal?.aborted) return { failed: cancelledError() };
    if (this.exited || !this.channel?.writable) return { failed: this.deathError(what, null, null) };
    this.lastUsedMs = Date.now();
    const id = this.nextId++;
    return new Promise<TaskOutcome<T>>((resolve) => {
      const cancel = (): void => this.cancel(id);
      const settle = (o: TaskOutcome<unknown>): void => {
        signal?.removeEventListener('abort', cancel);
        resolve(o as TaskOutcome<T>);
      };
      this.pending.set(id, { resolve: settle, onResponse, what, task, sentAtMs: Date.now(), timeoutMs, suspect, pieceBytes: 0 });
      signal?.addEventListener('abort', cancel, { once: true });
      this.out.push({ t: 'run', id, task, timeoutMs, respond: !!onResponse });
    });
  }

  /** Its caller cancelled run `id`: it fails at once, and the process running it is stopped (see `run`). */
  private cancel(id: number): void {
    const p = this.pending.get(id);
    if (!p || this.exited) return;
    this.pending.delete(id);
    if (this.piecesOf === p) this.piecesOf = undefined;
    p.resolve({ failed: cancelledError() });
    this.opts.logger?.info({ account: this.opts.account, task: p.task.kind, in_flight: this.pending.size }, 'a run in flight was cancelled by its caller: its sandbox process stopped');
    this.kill(sandboxError(STOPPED_BESIDE, `the account's sandbox process was stopped to cancel a run in flight beside this one`));
  }

  /**
   * Takes no new task and stops once its tasks in flight are done: at once when none is, and at the latest
   * RETIRE_GRACE_MS after the last of their deadlines (those still in flight then fail with RESTARTED, which the caller
   * runs again on the account's next process). Its tasks are not run again, as `kill` would have them; code they left
   * behind (a timer, a callback) stops with the process.
   */
  retire(): void {
    if (this.retired || this.exited) return;
    this.retired = true;
    const now = Date.now();
    let lastDeadlineMs = now;
    for (const p of this.pending.values()) lastDeadlineMs = Math.max(lastDeadlineMs, p.sentAtMs + p.timeoutMs);
    this.retireTimer = setTimeout(() => this.kill(sandboxError(RESTARTED, "the account's sandbox process was retired and its runs in flight did not end in time")), lastDeadlineMs - now + RETIRE_GRACE_MS);
    this.retireTimer.unref();
    this.stopIfRetiredAndIdle();
  }

  private stopIfRetiredAndIdle(): void {
    if (this.retired && this.pending.size === 0) this.kill(sandboxError(RESTARTED, "the account's sandbox process was retired"));
  }

  /** Stops the process: running tasks get `graceMs`, then it is killed. */
  async close(graceMs = 2000): Promise<void> {
    const child = this.child;
    if (!child || this.exited) return;
    this.stopReason ??= sandboxError('PoolClosedError', 'the sandbox pool is closed');
    const gone = new Promise<void>((r) => child.once('exit', () => r()));
    if (this.channel?.writable) this.channel.write(encodeFrames([{ t: 'close', graceMs }] satisfies ToHost[]), () => undefined);
    const timer = setTimeout(() => this.killProcesses(), graceMs + 1000);
    await gone;
    clearTimeout(timer);
  }

  private failSent(batch: ToHost[], why: string): void {
    for (const m of batch) {
      if (m.t !== 'run') continue;
      const p = this.pending.get(m.id);
      if (p && this.pending.delete(m.id)) p.resolve({ failed: sandboxError('SandboxError', `could not hand ${p.what} to the sandbox process: ${why}`) });
    }
    this.stopIfRetiredAndIdle();
  }

  kill(reason: SandboxError): void {
    this.stopReason ??= reason;
    this.killProcesses();
  }

  /** SIGKILLs the process and what it started (process-tree.ts): bubblewrap's first child outlived a kill of bubblewrap alone. */
  private killProcesses(): void {
    const pid = this.child?.pid;
    if (pid === undefined || this.exited) return;
    killTree(pid);
  }

  /**
   * The largest frame the host may send now: the largest answer one of its tasks in flight may have
   * (result-bounds.ts), plus room for the envelope, and never more than FRAME_MAX_BYTES (larger answers come in
   * pieces); a log line or `ready` when none is in flight.
   */
  private frameCap(): number {
    let cap = 0;
    for (const p of this.pending.values()) {
      cap = Math.max(cap, frameCapBytes(p.task));
      // Runs have the largest bound there is: no need to look further (thousands may be in flight).
      if (cap >= RESULT_MAX_BYTES) break;
    }
    return Math.min(cap + FRAME_ENVELOPE_BYTES, FRAME_MAX_BYTES);
  }

  /** The answer `m` of task `p` with its pieces put in (frame-pieces.ts), or why it cannot have them. */
  private withPieces<M extends { out: TaskOutcome<unknown> } | { payload: ResponseMessage }>(p: Pending, m: M): M | string {
    const pieces = p.pieces;
    p.pieces = undefined;
    p.pieceBytes = 0;
    if (this.piecesOf === p) this.piecesOf = undefined;
    if (!pieces) return m;
    if ('out' in m) {
      if (!('value' in m.out)) return 'pieces of an answer that is a failure';
      const filled = pieces.finish(m.out.value);
      return typeof filled === 'string' ? filled : { ...m, out: { value: filled.value } };
    }
    const filled = pieces.finish(m.payload);
    return typeof filled === 'string' ? filled : { ...m, payload: filled.value as ResponseMessage };
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
    if (m.t === 'piece') {
      // Those of a late response (after the task's answer) are dropped with it.
      const p = this.pending.get(m.id);
      if (!p) return;
      // Open answers of several tasks would each hold up to their bound here, unread by the runner (read-hold.ts).
      if (this.piecesOf && this.piecesOf !== p) return this.violation('pieces of two answers at once');
      this.piecesOf = p;
      p.pieceBytes += bytes;
      if (p.pieceBytes > frameCapBytes(p.task) + FRAME_ENVELOPE_BYTES) return this.violation(`pieces of ${p.pieceBytes} bytes of an answer to a ${p.task.kind} task, over its bound`);
      // The first piece of an answer is an answer coming (its last pieces are read in turns, after the deadline maybe);
      // the next ones are not: tiny pieces trickled one by one would put the deadline off for good.
      if (!p.pieces) this.lastAnswerMs = Date.now();
      const misfit = (p.pieces ??= new PieceAssembly()).add(m);
      if (misfit) return this.violation(misfit);
    } else if (m.t === 'done') {
      const p = this.pending.get(m.id);
      if (!p) return this.violation(`an answer to task ${m.id}, which is not in flight`);
      if (bytes + p.pieceBytes > frameCapBytes(p.task) + FRAME_ENVELOPE_BYTES) return this.violation(`an answer of ${bytes + p.pieceBytes} bytes to a ${p.task.kind} task, over its bound`);
      const whole = this.withPieces(p, m);
      if (typeof whole === 'string') return this.violation(whole);
      this.pending.delete(m.id);
      this.lastUsedMs = this.lastAnswerMs = Date.now();
      p.resolve(whole.out);
      this.stopIfRetiredAndIdle();
    } else if (m.t === 'response') {
      // Late ones (after the task's answer) are dropped; more than the task can have are a violation.
      const p = this.pending.get(m.id);
      if (!p) return;
      p.responses = (p.responses ?? 0) + 1;
      const most = p.task.kind === 'executeBatch' ? p.task.parts.reduce((n, part) => n + part.items.length, 0) : 1;
      if (p.responses > most) return this.violation(`${p.responses} responses to a task that may have ${most}`);
      const whole = this.withPieces(p, m);
      if (typeof whole === 'string') return this.violation(whole);
      p.onResponse?.(whole.payload);
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
    const rss = (this.rssBytes = treeRssBytes(this.child.pid));
    // The files of its /tmp count too (their bytes are bounded by SANDBOX_TMP_MB, their count only here).
    const tmp = sandboxTmp(this.child.pid, this.opts.tmpMb * 1024 * 1024);
    this.tmpBytes = tmp.dataBytes + tmp.files * TMP_FILE_BYTES;
    const files = tmp.files;
    const limit = this.opts.memoryMb * 1024 * 1024;
    if (rss + files * TMP_FILE_BYTES <= limit) return;
    const used = Math.round((rss + files * TMP_FILE_BYTES) / 1024 / 1024);
    const ofFiles = files * TMP_FILE_BYTES >= 1024 * 1024 ? ` (${files} files in its /tmp counting ${TMP_FILE_BYTES} bytes each)` : '';
    this.opts.logger?.warn({ account: this.opts.account, rss_mb: used, tmp_files: files, limit_mb: this.opts.memoryMb }, 'sandbox process over its memory limit: stopped');
    this.kill(sandboxError('MemoryLimitError', `the account's sandbox process used ${used} MiB${ofFiles}, over its memory limit of ${this.opts.memoryMb} MiB (SANDBOX_MEMORY_MB); it was stopped`));
  }

  /**
   * Runs on the process's own thread: a run past its deadline (from when it was sent, or from the process's last
   * answer when later: runs queued behind a busy thread are not blamed for it), with nothing heard from the process
   * since, means a run blocks the thread (awaits are bounded inside). The process is stopped. The culprit is known
   * when it is the only run in flight, or the only suspect (see `suspect`): it fails with a TimeoutError and its code
   * runs guarded from then on (`onOverrun`). Every other run in flight fails with STOPPED_BESIDE.
   */
  private checkDeadlines(): void {
    // Answers the app holds back unread are not a silence of the process.
    if (this.exited || this.stopReason || this.hold?.holding) return;
    const now = Date.now();
    let overdue = false;
    for (const p of this.pending.values()) if ((overdue = now > Math.max(p.sentAtMs, this.lastAnswerMs) + p.timeoutMs + OVERRUN_GRACE_MS)) break;
    if (!overdue) return;
    const inFlight = [...this.pending];
    const candidates = inFlight.length === 1 ? inFlight : inFlight.filter(([, p]) => p.suspect);
    const culprit = candidates.length === 1 ? candidates[0] : undefined;
    if (culprit) {
      const [id, p] = culprit;
      this.opts.onOverrun?.(p.task);
      this.failures.set(id, sandboxError('TimeoutError', `${p.what} timed out after ${p.timeoutMs} ms (its sandbox process was stopped)`));
    }
    this.opts.logger?.warn({ account: this.opts.account, in_flight: this.pending.size, blamed: culprit ? culprit[1].what : undefined }, 'a run blocked its sandbox process past its deadline: stopped');
    this.kill(sandboxError(STOPPED_BESIDE, `the account's sandbox process was stopped: a run blocked it past its deadline while this one was in flight (${this.pending.size} were)`));
  }

  private deathError(what: string, code: number | null, signal: NodeJS.Signals | null): SandboxError {
    if (HEAP_EXHAUSTED.test(this.stderr)) {
      const where = this.opts.runIn === 'process' ? "heap of the account's sandbox process" : 'heap per worker thread';
      return sandboxError('MemoryLimitError', `${what} exceeded the memory limit (${this.opts.heapMb} MB ${where}, WORKER_HEAP_MB); the account's sandbox process was stopped and starts again for the next run`);
    }
    const how = signal ? `was killed (${signal})` : code !== null && code > 128 ? `was killed (${signalName(code - 128)})` : `exited (code ${code ?? 'unknown'})`;
    return sandboxError('SandboxCrashError', `the account's sandbox process ${how} while running ${what}; it is started again for the next run`);
  }

  private exit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.watchdog) clearInterval(this.watchdog);
    clearTimeout(this.retireTimer);
    this.hold?.stop();
    const pending = [...this.pending];
    this.pending.clear();
    if (!this.stopReason && pending.length) {
      this.opts.logger?.warn({ account: this.opts.account, code, signal, stderr: this.stderr.slice(-500) }, 'sandbox process died');
    }
    for (const [id, p] of pending) p.resolve({ failed: this.failures.get(id) ?? (this.stopReason ? { ...this.stopReason } : this.deathError(p.what, code, signal)) });
    this.onExit();
  }
}
