import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, sep } from 'node:path';
import { RateBudget } from '@app/contracts';
import type { SandboxLogger, SandboxPoolStats } from '../types';
import { resolveHostFile, resolveWorkerFile } from '../worker-file';
import { cancelledError, sandboxError, type TaskOutcome } from '../worker-pool';
import type { ResponseMessage, WorkerTask } from '../worker-protocol';
import { AccountView, accountKey } from './account-view';
import { AccountSlots } from '@app/net';
import { EgressProxy, type EgressBudgets } from './egress-proxy';
import { EgressJudge, type EgressRules } from './egress-rules';
import type { HostConfig, SandboxRunIn } from './host-protocol';
import { HostProcess, RESTARTED, STOPPED_BESIDE } from './host-process';
import { INSIDE, type Mount, sandboxCommand, sandboxEnv } from './sandbox-command';

/** How accounts' sandbox processes are started and bounded (the SANDBOX_* settings). */
export interface SandboxIsolationOptions {
  /** bubblewrap's path (see `detectIsolation`). */
  bwrap: string;
  /** Size of the sandbox's /tmp (a tmpfs of its own, emptied when the sandbox stops). */
  tmpMb: number;
  /** Scheduling priority of the sandbox processes (SANDBOX_NICE): below the platform's own processes. */
  nice: number;
  /** Where an account's runs execute inside its sandbox process (SANDBOX_RUN_IN). */
  runIn: SandboxRunIn;
  threadsPerAccount: number;
  memoryMb: number;
  /** Resident memory of every sandbox process of this app together (SANDBOX_MEMORY_TOTAL_MB, resolved); past it the largest is stopped. */
  memoryTotalMb: number;
  /** A sandbox process with nothing to run for this long is stopped. */
  idleMs: number;
  /** Sandbox processes kept at once; beyond it the least recently used idle one is stopped. */
  maxProcesses: number;
  /** First uid of the range the sandboxes run as (when the app runs as root). */
  uidBase: number;
  egress: EgressRules;
  /** Outbound connections one account's sandbox may have open at once (SANDBOX_EGRESS_MAX_CONNECTIONS); unbounded when absent. */
  egressMaxConnections?: number;
  /** Bytes one account's sandbox moves through its egress proxy per second (SANDBOX_EGRESS_BYTES_PER_SECOND); unbounded when absent or 0. */
  egressBytesPerSecond?: number;
  /** Connections one account's sandbox may ask its egress proxy for per second, after a burst of ten seconds' worth (SANDBOX_EGRESS_CONNECTS_PER_SECOND); unbounded when absent or 0. */
  egressConnectsPerSecond?: number;
  /** Of those, the ones the proxy refuses itself (SANDBOX_EGRESS_REFUSED_PER_SECOND); unbounded when absent or 0. */
  egressRefusedPerSecond?: number;
  /** Lookups by name one account's sandbox may have its egress proxy make at once (SANDBOX_EGRESS_LOOKUPS_AT_ONCE); unbounded when absent. */
  egressLookupsAtOnce?: number;
  /**
   * How long the app waits before it reads more of an account's answers (ms; 0: read on). The runner waits while the
   * account's events wait for its EMITS_*_PER_SECOND_PER_ACCOUNT budgets, so that its results past them wait in its
   * own sandbox, not in the runner (read-hold.ts).
   */
  readPauseMs?: (account: string) => number;
}

export interface IsolatedRunnerOptions extends SandboxIsolationOptions {
  npmCacheDir: string;
  heapMb: number;
  vmTimeout: 'always' | 'adaptive' | 'never';
  concurrentTasksPerWorker: number;
  logger?: SandboxLogger;
}

const UID_RANGE = 100_000;
/** Bundles remembered as having blocked a sandbox process (beyond it the memory starts over). */
const GUARDED_MAX = 10_000;
const SWEEP_MS = 5_000;
/** How often the sandbox processes' memory together is checked against memoryTotalMb (each one's own is checked every 100 ms). */
const TOTAL_MEMORY_CHECK_MS = 250;
/** Times a run in flight is run again after its account's sandbox process was restarted for an access change (`attempt`). */
const RESTART_RERUNS = 3;
/**
 * Retired processes an account may have still finishing their tasks; retired once more, its oldest is stopped (its
 * tasks run again). A deletion retires up to twice on a replica (the api's message, the deleted source's deactivate
 * hook), and a few deletions in a row are common; a tenant deleting source after source beside long runs is bounded.
 */
const RETIRED_MAX_PER_ACCOUNT = 4;

interface AccountSandbox {
  host: HostProcess;
  egress: EgressProxy;
}

/**
 * Runs every account's component code in that account's own sandbox process
 * (bubblewrap namespaces with no network, an unprivileged uid, Node's permission
 * model, a memory limit), started on first use and stopped when idle. A crash
 * or a limit breach ends only that account's process.
 */
export class IsolatedRunner {
  private readonly sandboxes = new Map<string, AccountSandbox>();
  /** Processes retired (`retire`), oldest first, with their accounts, until their tasks in flight are done. */
  private readonly retiring = new Map<AccountSandbox, string>();
  private readonly starting = new Map<string, Promise<AccountSandbox>>();
  private readonly views = new Map<string, AccountView>();
  private readonly judge: EgressJudge;
  /**
   * Every account's budgets of its egress proxies, kept across its sandbox's restarts (a restart owes what it owed);
   * its lines of refused connections in the app's log: 100 at once, then 10 a second.
   */
  private readonly egressBudgets: EgressBudgets;
  private readonly runDir: string;
  private readonly hostFile = resolveHostFile();
  private readonly workerFile = resolveWorkerFile();
  private readonly asRoot = process.getuid?.() === 0;
  private readonly sweeper: NodeJS.Timeout;
  private readonly memoryWatch: NodeJS.Timeout;
  private completed = 0;
  /** Sandbox processes started so far (names each one's egress socket directory). */
  private launches = 0;
  private closed = false;
  /** Bundles whose run blocked its sandbox process's thread: their runs are guarded ('adaptive' vm timeout) from then on. */
  private readonly guarded = new Set<string>();
  /** Per account, the end of the queue of its runs to be run again one at a time (see `rerun`). */
  private readonly suspects = new Map<string, Promise<void>>();

  constructor(private readonly opts: IsolatedRunnerOptions) {
    this.judge = new EgressJudge(opts.egress);
    // Each after a burst of ten seconds' worth.
    const budget = (rate = 0): RateBudget | undefined => (rate > 0 ? new RateBudget(rate, rate * 10) : undefined);
    this.egressBudgets = {
      bytes: budget(opts.egressBytesPerSecond),
      logLines: new RateBudget(10, 100),
      connects: budget(opts.egressConnectsPerSecond),
      refused: budget(opts.egressRefusedPerSecond),
      lookups: opts.egressLookupsAtOnce ? new AccountSlots(opts.egressLookupsAtOnce) : undefined,
    };
    // Unix socket paths are short (108 bytes): the egress sockets live under the temp dir,
    // in a directory named after this process (left over by a killed app, it is removed by the next one).
    removeStaleRunDirs();
    this.runDir = mkdtempSync(join(tmpdir(), `ess-sbx-${process.pid}-`));
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweeper.unref();
    this.memoryWatch = setInterval(() => this.checkTotalMemory(), TOTAL_MEMORY_CHECK_MS);
    this.memoryWatch.unref();
  }

  /** `signal` cancels the run: not started, it never starts; in flight, its sandbox process stops it (HostProcess.run). */
  async run<T>(account: string, task: WorkerTask, timeoutMs: number, onResponse?: (r: ResponseMessage) => void, signal?: AbortSignal): Promise<TaskOutcome<T>> {
    if (this.closed) return { failed: { name: 'PoolClosedError', message: 'the sandbox pool is closed' } };
    try {
      task.bundle = await this.view(account).map(task.bundle);
    } catch (e) {
      return { failed: setupFailure(e) };
    }
    if (this.guarded.has(task.bundle.key)) task.guard = true;
    const out = await this.attempt<T>(account, task, timeoutMs, onResponse, false, signal);
    if (!('failed' in out) || out.failed.name !== STOPPED_BESIDE) return out;
    return this.rerun<T>(account, task, timeoutMs, onResponse, signal);
  }

  /**
   * A run in flight when its process was stopped for a blocked thread, with others: the app cannot tell which one
   * blocked it. It runs again as a suspect, one suspect of the account at a time, guarded (a synchronous block then
   * ends in vm's timeout): a stop while it is in flight blames it alone. Nothing of its first attempt was kept (its
   * emits and db writes come back with its result; a `respond()` already sent stays the answer).
   */
  private rerun<T>(account: string, task: WorkerTask, timeoutMs: number, onResponse?: (r: ResponseMessage) => void, signal?: AbortSignal): Promise<TaskOutcome<T>> {
    this.opts.logger?.info({ account, task: task.kind }, 'run in flight when its sandbox process was stopped: running it again as a suspect');
    task.guard = true;
    const turn = (this.suspects.get(account) ?? Promise.resolve()).then(() => this.attempt<T>(account, task, timeoutMs, onResponse, true, signal));
    const settled = (): void => {
      if (this.suspects.get(account) === done) this.suspects.delete(account);
    };
    const done = turn.then(settled, settled);
    this.suspects.set(account, done);
    return turn;
  }

  /**
   * One run in the account's sandbox process; a run in flight when that process was restarted (`restart`) runs again on
   * the new one, RESTART_RERUNS times at most: access changes made over and over (members added and removed in a loop)
   * then fail the run instead of running it again for good.
   */
  private async attempt<T>(account: string, task: WorkerTask, timeoutMs: number, onResponse: ((r: ResponseMessage) => void) | undefined, suspect: boolean, signal?: AbortSignal): Promise<TaskOutcome<T>> {
    for (let reruns = 0; ; reruns++) {
      if (signal?.aborted) return { failed: cancelledError() };
      let sandbox: AccountSandbox;
      try {
        sandbox = await this.sandbox(account);
      } catch (e) {
        return { failed: setupFailure(e) };
      }
      const out = await sandbox.host.run<T>(task, timeoutMs, onResponse, suspect, signal);
      if ('failed' in out && out.failed.name === RESTARTED && !this.closed && reruns < RESTART_RERUNS) continue;
      this.completed++;
      return out;
    }
  }

  /**
   * Stops the sandbox processes of these accounts at once, when who may reach an
   * account changed: code a removed member (or a revoked key's holder) left running there — a patched global, a timer —
   * must not see the account's later runs. Runs in flight run again on a new process, as after a stop for a blocked
   * thread (nothing of their first attempt was kept); the next run starts the new process. Returns how many were stopped.
   */
  restart(accounts: readonly string[]): number {
    const stopped = accounts.filter((a) => this.sandboxes.has(a));
    for (const account of stopped) {
      const s = this.sandboxes.get(account)!;
      this.sandboxes.delete(account);
      this.opts.logger?.info({ account, in_flight: s.host.inFlight }, "sandbox process restarted: the account's access changed");
      s.host.kill(sandboxError(RESTARTED, "the account's sandbox process was restarted: its access changed"));
    }
    return stopped.length;
  }

  /**
   * Retires the sandbox processes of these accounts, when a source or workflow of the account was deleted: code its
   * runs left behind there (a timer, a callback) must stop, but the account's other runs in flight must not run twice,
   * as `restart` would have them. A retired process takes no new task (the account's next one starts a new process at
   * once) and is stopped once its tasks in flight are done (HostProcess.retire). At most RETIRED_MAX_PER_ACCOUNT
   * retired processes per account: past it the oldest is stopped, as by `restart` (its tasks run again on the new
   * process), so that deleting source after source does not keep a process per deletion, each within SANDBOX_MEMORY_MB
   * and none counted in SANDBOX_MAX_PROCESSES. Returns how many were retired.
   */
  retire(accounts: readonly string[]): number {
    const retired = accounts.filter((a) => this.sandboxes.has(a));
    for (const account of retired) {
      const s = this.sandboxes.get(account)!;
      this.sandboxes.delete(account);
      const older = [...this.retiring].filter(([, a]) => a === account);
      if (older.length >= RETIRED_MAX_PER_ACCOUNT) {
        this.retiring.delete(older[0][0]);
        older[0][0].host.kill(sandboxError(RESTARTED, `the account's sandbox process, retired, was stopped before its runs in flight had finished: the account had ${RETIRED_MAX_PER_ACCOUNT} more retired since`));
      }
      this.retiring.set(s, account);
      this.opts.logger?.info({ account, in_flight: s.host.inFlight }, 'sandbox process retired: a source or workflow of the account was deleted');
      s.host.retire();
    }
    return retired.length;
  }

  stats(): SandboxPoolStats & { sandboxes: number } {
    const all = [...this.sandboxes.values(), ...this.retiring.keys()];
    const inFlight = all.reduce((n, s) => n + s.host.inFlight, 0);
    return { threads: all.length * (this.opts.runIn === 'process' ? 1 : this.opts.threadsPerAccount), queueSize: inFlight, completed: this.completed, utilization: 0, guardedBundles: this.guarded.size, sandboxes: all.length };
  }

  async close(graceMs = 2000): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    clearInterval(this.memoryWatch);
    await Promise.all([...this.sandboxes.values(), ...this.retiring.keys()].map((s) => s.host.close(graceMs)));
    rmSync(this.runDir, { recursive: true, force: true });
  }

  private guard(bundleKey: string): void {
    if (this.guarded.size >= GUARDED_MAX) this.guarded.clear();
    this.guarded.add(bundleKey);
  }

  /** Kept per account name: its key is a hash, not worth computing on every run. */
  private view(account: string): AccountView {
    let v = this.views.get(account);
    if (!v) {
      v = new AccountView(join(this.opts.npmCacheDir, 'views', accountKey(account)), INSIDE.code);
      this.views.set(account, v);
    }
    return v;
  }

  private uidOf(key: string): number {
    return this.opts.uidBase + (parseInt(key.slice(0, 8), 16) % UID_RANGE);
  }

  /** The account's running sandbox, or one being started (concurrent first calls share it). */
  private sandbox(account: string): Promise<AccountSandbox> {
    const existing = this.sandboxes.get(account);
    if (existing && !existing.host.exited) return Promise.resolve(existing);
    let starting = this.starting.get(account);
    if (!starting) {
      starting = this.launch(account).finally(() => this.starting.delete(account));
      this.starting.set(account, starting);
    }
    return starting;
  }

  private async launch(account: string): Promise<AccountSandbox> {
    this.evictIfFull();
    const key = accountKey(account);
    const uid = this.uidOf(key);
    // A directory of this process's own: the proxy of a process being stopped removes its socket as it closes, which
    // was the next process's when they shared a path (a restart or a crash, and at once the account's next run).
    const sockets = join(this.runDir, `${key}-${(this.launches++).toString(36)}`);
    mkdirSync(sockets, { recursive: true, mode: 0o755 });
    const view = this.view(account);
    mkdirSync(view.dir, { recursive: true, mode: 0o755 });
    const egress = new EgressProxy({
      dir: sockets,
      judge: this.judge,
      logger: this.opts.logger,
      account,
      insideDir: INSIDE.sockets,
      maxConnections: this.opts.egressMaxConnections,
      budgets: this.egressBudgets,
    });
    await egress.start();
    const pause = this.opts.readPauseMs;
    const host = new HostProcess({
      account,
      ...this.command(view, sockets, uid, egress),
      memoryMb: this.opts.memoryMb,
      tmpMb: this.opts.tmpMb,
      runIn: this.opts.runIn,
      heapMb: this.opts.heapMb,
      onOverrun: (task) => this.guard(task.bundle.key),
      readPauseMs: pause && (() => pause(account)),
      logger: this.opts.logger,
    });
    const sandbox = { host, egress };
    host.onExit = () => {
      egress.close();
      rmSync(sockets, { recursive: true, force: true });
      if (this.sandboxes.get(account) === sandbox) this.sandboxes.delete(account);
      this.retiring.delete(sandbox);
    };
    host.start();
    this.sandboxes.set(account, sandbox);
    this.opts.logger?.info({ account, uid: this.asRoot ? uid : undefined }, 'sandbox process started');
    return sandbox;
  }

  /** The bubblewrap command line and environment of one account's sandbox host. */
  private command(view: AccountView, sockets: string, uid: number, egress: EgressProxy): { command: string; args: string[]; env: Record<string, string> } {
    const app = projectMounts();
    // Extra CA certificates the operator gave node (a TLS-inspecting proxy, a private CA) apply to component code too.
    const ca = process.env.NODE_EXTRA_CA_CERTS;
    const caMounts: Mount[] = ca && existsSync(ca) ? [{ outside: ca, inside: ca }] : [];
    const inside = (p: string): string => {
      const m = app.find((x) => p === x.outside || p.startsWith(`${x.outside}${sep}`));
      if (!m) throw new Error(`${p} is not inside the project's mounted code`);
      return m.inside + p.slice(m.outside.length);
    };
    const config: HostConfig = {
      runIn: this.opts.runIn,
      threads: this.opts.threadsPerAccount,
      heapMb: this.opts.heapMb,
      vmTimeout: this.opts.vmTimeout,
      concurrentTasksPerWorker: this.opts.concurrentTasksPerWorker,
      workerFile: inside(this.workerFile),
      platformRequireFrom: inside(require.resolve('piscina')),
      egressSocket: egress.insidePath,
      idleTimeoutMs: this.opts.idleMs,
    };
    const { command, args } = sandboxCommand({
      bwrap: this.opts.bwrap,
      hostFile: inside(this.hostFile),
      hostConfig: config,
      readOnly: [...app, { outside: view.dir, inside: INSIDE.code }, ...caMounts],
      tmpMb: this.opts.tmpMb,
      nice: this.opts.nice,
      sockets,
      uid,
      asRoot: this.asRoot,
    });
    return { command, args, env: sandboxEnv(caMounts.length ? ca : undefined) };
  }

  private evictIfFull(): void {
    if (this.sandboxes.size < this.opts.maxProcesses) return;
    const idle = [...this.sandboxes.entries()].filter(([, s]) => s.host.inFlight === 0).sort((a, b) => a[1].host.lastUsedMs - b[1].host.lastUsedMs);
    if (!idle.length) {
      this.opts.logger?.warn({ max: this.opts.maxProcesses }, 'every sandbox process is busy: starting one above SANDBOX_MAX_PROCESSES');
      return;
    }
    const [account, s] = idle[0];
    this.sandboxes.delete(account);
    void s.host.close();
  }

  /**
   * Accounts each within their own memory limit can together take the machine's memory (64 processes of 1 GiB, and
   * their /tmp of SANDBOX_TMP_MB each, a tmpfs): past memoryTotalMb the largest sandbox (its processes' resident
   * memory and its /tmp) is stopped, its runs failed with MemoryLimitError, until the rest fit.
   */
  private checkTotalMemory(): void {
    const limit = this.opts.memoryTotalMb * 1024 * 1024;
    const live = [...this.sandboxes.entries(), ...[...this.retiring].map(([s, account]) => [account, s] as const)]
      .filter(([, s]) => !s.host.exited)
      .map(([account, s]) => ({ account, s, used: s.host.rssBytes + s.host.tmpBytes }));
    let total = live.reduce((sum, x) => sum + x.used, 0);
    if (total <= limit) return;
    const mib = (bytes: number): number => Math.round(bytes / 1024 / 1024);
    for (const { account, s, used } of live.sort((a, b) => b.used - a.used)) {
      if (total <= limit) break;
      if (this.sandboxes.get(account) === s) this.sandboxes.delete(account);
      this.opts.logger?.warn({ account, rss_mb: mib(used), total_mb: mib(total), limit_mb: this.opts.memoryTotalMb }, 'sandbox processes over their memory limit together: the largest stopped');
      s.host.kill(
        sandboxError(
          'MemoryLimitError',
          `the sandbox processes of this app used ${mib(total)} MiB together, over their limit of ${this.opts.memoryTotalMb} MiB (SANDBOX_MEMORY_TOTAL_MB); this account's, the largest at ${mib(used)} MiB, was stopped`,
        ),
      );
      total -= used;
    }
  }

  private sweep(): void {
    const now = Date.now();
    for (const [account, s] of this.sandboxes) {
      if (s.host.inFlight === 0 && now - s.host.lastUsedMs > this.opts.idleMs) {
        this.sandboxes.delete(account);
        this.opts.logger?.info({ account }, 'idle sandbox process stopped');
        void s.host.close();
      }
    }
  }
}

/** Egress socket directories of app processes that no longer exist. */
function removeStaleRunDirs(): void {
  for (const name of readdirSync(tmpdir())) {
    const pid = /^ess-sbx-(\d+)-/.exec(name)?.[1];
    if (!pid || Number(pid) === process.pid) continue;
    try {
      process.kill(Number(pid), 0);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ESRCH') rmSync(join(tmpdir(), name), { recursive: true, force: true });
    }
  }
}

/** The project's own code a sandbox host needs, mounted read-only under /app: node_modules and, when running from the build, dist. */
function projectMounts(): Mount[] {
  const main = require.resolve('piscina');
  const nodeModules = main.slice(0, main.lastIndexOf(`${sep}node_modules${sep}`) + 13);
  const mounts: Mount[] = [{ outside: nodeModules, inside: `${INSIDE.app}/node_modules` }];
  const dist = __dirname.lastIndexOf(`${sep}dist${sep}`);
  if (dist >= 0) mounts.push({ outside: __dirname.slice(0, dist + 5), inside: `${INSIDE.app}/dist` });
  return mounts;
}

function setupFailure(e: unknown): { name: string; message: string } {
  const err = e as Error;
  return { name: err.name === 'Error' ? 'SandboxError' : err.name, message: err.message };
}
