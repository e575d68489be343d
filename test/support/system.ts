import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Client } from 'pg';
import { need } from './env';

/** One app's NATS user on the run's server (scripts/lib/nats-auth.js). */
export interface NatsAppCredentials {
  user: string;
  password: string;
  inboxPrefix: string;
}
export type NatsCredentials = Record<AppName, NatsAppCredentials>;
interface NatsAuthScript {
  addTestInstallation(o: { dir: string; pid: number; url: string; prefix: string }): Promise<NatsCredentials>;
  claimTestInstallation(o: { dir: string; pid: number; url: string; fallbackPrefix: string }): Promise<{ prefix: string; credentials: NatsCredentials }>;
  rotateTestPassword(o: { dir: string; pid: number; prefix: string; app: AppName }): Promise<string>;
}
// eslint-disable-next-line @typescript-eslint/no-var-requires
const natsAuth = require('../../scripts/lib/nats-auth.js') as NatsAuthScript;

/**
 * Adds the per-app NATS users of an installation (a NATS_PREFIX) to the run's
 * server, with the permissions each app has in production.
 */
export function addNatsInstallation(prefix: string): Promise<NatsCredentials> {
  return natsAuth.addTestInstallation({ dir: need('TEST_NATS_AUTH_DIR'), pid: Number(need('TEST_NATS_PID')), url: need('TEST_NATS_URL'), prefix });
}

/**
 * Boots the real system for end-to-end tests: api, runner(s) and delivery as
 * separate processes from `dist/`, on their own database (cloned from the run's
 * migrated template) and their own NATS prefix.
 */
export interface System {
  baseUrl: string;
  /** `http://127.0.0.1:<port>` (no `/v1`). */
  origin: string;
  env: Record<string, string>;
  databaseUrl: string;
  natsPrefix: string;
  /** Each app's NATS user (the apps get theirs as NATS_USER / NATS_PASSWORD / NATS_INBOX_PREFIX). */
  nats: NatsCredentials;
  /** The environment `startApp` gives an app: `env` plus its own NATS user. */
  appEnv(app: AppName): Record<string, string>;
  procs: Map<string, ChildProcess>;
  /** Starts another app process (e.g. a second runner) with extra env. */
  startApp(app: AppName, name: string, extraEnv?: Record<string, string>): Promise<ChildProcess>;
  stopApp(name: string, signal?: NodeJS.Signals): Promise<void>;
  logs(name: string): string;
  stop(): Promise<void>;
}

export type AppName = 'api' | 'runner' | 'delivery';

const ROOT = join(__dirname, '..', '..');

/**
 * A free port for an app under test, drawn at random below Linux's ephemeral range
 * (32768+): a port the OS handed out with `listen(0)` can be taken again by any
 * outgoing connection before the app binds it.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/** Whether a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls `check` until it returns a truthy value or the deadline passes. */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, { timeoutMs = 20_000, intervalMs = 100, what = 'condition' } = {}): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      lastError = e;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`);
}

async function createDatabase(): Promise<{ url: string; name: string }> {
  const runId = need('TEST_RUN_ID');
  const name = `ess_t_${runId}_${randomBytes(3).toString('hex')}`;
  const admin = new Client({ connectionString: need('TEST_PG_ADMIN_URL') });
  await admin.connect();
  try {
    await admin.query(`create database "${name}" template "${need('TEST_TEMPLATE_DB')}"`);
  } finally {
    await admin.end();
  }
  return { url: need('TEST_DATABASE_URL').replace(/\/[^/?]+(\?|$)/, `/${name}$1`), name };
}

/** `ip:port` of the test Postgres (`127.0.0.1` for `localhost`), for SANDBOX_EGRESS_DENY. */
function postgresAddress(url: string): string {
  const u = new URL(url);
  return `${u.hostname === 'localhost' ? '127.0.0.1' : u.hostname}:${u.port || 5432}`;
}

async function waitHealthy(url: string, proc: ChildProcess, name: string, logs: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`${name} exited (${proc.exitCode ?? proc.signalCode}):\n${logs().slice(-4000)}`);
    const res = await fetch(url).catch(() => undefined);
    if (res?.ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${name} at ${url}\n--- ${name} output ---\n${logs().slice(-4000)}`);
}

/** Gives one app's NATS user of an installation a new password and reloads the run's server (a rotation); returns it. */
export function rotateNatsPassword(prefix: string, app: AppName): Promise<string> {
  return natsAuth.rotateTestPassword({ dir: need('TEST_NATS_AUTH_DIR'), pid: Number(need('TEST_NATS_PID')), prefix, app });
}

/** A NATS server of the test's own instead of the run's (test/support/own-nats.ts): its URL and the installation's users. */
export interface SystemNats {
  url: string;
  prefix: string;
  credentials: NatsCredentials;
}

/** Starts api + runner + delivery. `env` overrides settings (e.g. short timers). */
export async function startSystem(env: Record<string, string> = {}, { apps = ['api', 'runner', 'delivery'] as AppName[], ownNats }: { apps?: AppName[]; ownNats?: SystemNats } = {}): Promise<System> {
  // A test with a Postgres of its own (one it crashes) passes its migrated database's URL.
  const db = env.DATABASE_URL ? { url: env.DATABASE_URL } : await createDatabase();
  const port = await freePort();
  // Users the run's server was started with (no reload), or new ones when they are all taken.
  const claimed = ownNats
    ? { prefix: ownNats.prefix, credentials: ownNats.credentials }
    : await natsAuth.claimTestInstallation({
        dir: need('TEST_NATS_AUTH_DIR'),
        pid: Number(need('TEST_NATS_PID')),
        url: need('TEST_NATS_URL'),
        fallbackPrefix: `t_${need('TEST_RUN_ID')}_${randomBytes(3).toString('hex')}`,
      });
  const { prefix: natsPrefix, credentials: nats } = claimed;
  const baseEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    DATABASE_URL: db.url,
    NATS_URL: ownNats?.url ?? need('TEST_NATS_URL'),
    NATS_PREFIX: natsPrefix,
    DATA_DIR: process.env.TEST_DATA_DIR ?? join(ROOT, '.data', 'test'),
    SECRETS_KEY: randomBytes(32).toString('hex'),
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    ALLOW_LOOPBACK: 'true',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
    PARTITIONS: '8',
    // JetStream reserves EMITS_MAX_BYTES per stream up front: dozens of systems at 1 GiB each exhaust the server.
    EMITS_MAX_BYTES: String(64 * 1024 * 1024),
    LEASE_TTL_MS: '3000',
    WORKER_THREADS: '2',
    RUNNER_METRICS_PORT: '0',
    DELIVERY_METRICS_PORT: '0',
    // As npm start does: the runner is not told where Postgres is, so its address is refused to component code here.
    SANDBOX_EGRESS_DENY: postgresAddress(db.url),
    ...env,
  };
  const envOf = (app: AppName): Record<string, string> => ({ ...baseEnv, NATS_USER: nats[app].user, NATS_PASSWORD: nats[app].password, NATS_INBOX_PREFIX: nats[app].inboxPrefix });
  const procs = new Map<string, ChildProcess>();
  const output = new Map<string, string[]>();
  const origin = `http://127.0.0.1:${port}`;

  const startApp = async (app: AppName, name: string, extraEnv: Record<string, string> = {}): Promise<ChildProcess> => {
    const appEnv: Record<string, string> = { ...envOf(app), ...extraEnv };
    // The runner needs only NATS (DESIGN.md): it gets no Postgres credentials.
    if (app === 'runner') delete appEnv.DATABASE_URL;
    if (app === 'runner' && appEnv.RUNNER_METRICS_PORT === '0') appEnv.RUNNER_METRICS_PORT = String(await freePort());
    if (app === 'delivery' && appEnv.DELIVERY_METRICS_PORT === '0') appEnv.DELIVERY_METRICS_PORT = String(await freePort());
    const proc = spawn(process.execPath, [join(ROOT, 'dist', 'apps', app, 'main.js')], { env: appEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: string[] = [];
    output.set(name, lines);
    const keep = (d: Buffer): void => {
      lines.push(d.toString());
      if (lines.length > 2000) lines.splice(0, 1000);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    procs.set(name, proc);
    const logs = (): string => lines.join('');
    if (app === 'api') await waitHealthy(`${origin}/healthz`, proc, name, logs);
    else await waitHealthy(`http://127.0.0.1:${appEnv[app === 'runner' ? 'RUNNER_METRICS_PORT' : 'DELIVERY_METRICS_PORT']}/healthz`, proc, name, logs);
    return proc;
  };

  const stopApp = async (name: string, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    const proc = procs.get(name);
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      proc.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      proc.kill(signal);
    });
  };

  const system: System = {
    baseUrl: `${origin}/v1`,
    origin,
    env: baseEnv,
    databaseUrl: db.url,
    natsPrefix,
    nats,
    appEnv: envOf,
    procs,
    startApp,
    stopApp,
    logs: (name) => (output.get(name) ?? []).join(''),
    stop: async () => {
      await Promise.all([...procs.keys()].map((n) => stopApp(n)));
    },
  };
  try {
    for (const app of apps) await startApp(app, app);
  } catch (e) {
    await system.stop();
    throw e;
  }
  return system;
}
