/**
 * What the delivery benchmarks share: their knobs, a free port, polling, and
 * the NATS users of a run (an admin that creates the streams, as the api does,
 * and the delivery app's own).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { AddressInfo, createServer as netServer } from 'node:net';
import { connect, type NatsConnection } from 'nats';
import { Client } from 'pg';
import { loadConfig } from '@app/config';
import { Names } from '@app/contracts';
import { NatsService } from '@app/nats';

export const ROOT = join(__dirname, '..', '..', '..', '..');

/** `--name <n>` or BENCH_<NAME>, else `def`. */
export const arg = (name: string, def: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  const env = process.env[`BENCH_${name.toUpperCase()}`];
  return i > 0 ? Number(process.argv[i + 1]) : env ? Number(env) : def;
};
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface NatsAuthScript {
  addTestInstallation(o: { dir: string; pid: number; url: string; prefix: string }): Promise<Record<'delivery', { user: string; password: string; inboxPrefix: string }>>;
}

/** The NATS users of this bench: an admin that publishes and creates the streams (the api's job), and the delivery app's own. */
export async function natsUsers(natsUrl: string, prefix: string): Promise<{ admin: Record<string, string>; delivery: Record<string, string> }> {
  const e = process.env;
  if (!e.TEST_NATS_AUTH_DIR) {
    const auth: Record<string, string> = e.NATS_USER && e.NATS_PASSWORD ? { NATS_USER: e.NATS_USER, NATS_PASSWORD: e.NATS_PASSWORD } : {};
    return { admin: auth, delivery: auth };
  }
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const script = require(join(ROOT, 'scripts', 'lib', 'nats-auth.js')) as NatsAuthScript;
  const own = (await script.addTestInstallation({ dir: e.TEST_NATS_AUTH_DIR, pid: Number(e.TEST_NATS_PID), url: natsUrl, prefix })).delivery;
  return {
    admin: { NATS_USER: e.TEST_NATS_USER ?? '', NATS_PASSWORD: e.TEST_NATS_PASSWORD ?? '' },
    delivery: { NATS_USER: own.user, NATS_PASSWORD: own.password, NATS_INBOX_PREFIX: own.inboxPrefix },
  };
}

/** Creates the installation's streams and buckets as the api does at its start (the delivery app only binds to them). */
export async function createStreams(natsUrl: string, prefix: string, admin: Record<string, string>): Promise<void> {
  const creator = new NatsService(loadConfig({ NATS_URL: natsUrl, NATS_PREFIX: prefix, DATA_DIR: join(ROOT, '.data', 'bench'), ...admin }), 'delivery-bench', { manageStreams: true });
  await creator.start();
  await creator.stop();
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = netServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export async function waitFor(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await sleep(20);
  }
  return false;
}

export async function waitForHealthy(port: number): Promise<boolean> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if ((await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok) return true;
    await sleep(100);
  }
  return false;
}

export interface BenchInstallation {
  dbUrl: string;
  natsUrl: string;
  prefix: string;
  names: Names;
  users: Awaited<ReturnType<typeof natsUsers>>;
  /** The admin's connection (publishes events as the runner does). */
  nc: NatsConnection;
  /** Drops the installation's streams (buckets and object stores included) and its database. */
  close(): Promise<void>;
}

/** A database and a NATS prefix of their own for one benchmark run, on the dispatcher's servers (or the local defaults). */
export async function openBenchInstallation(): Promise<BenchInstallation> {
  const run = randomBytes(3).toString('hex');
  const adminUrl = process.env.TEST_PG_ADMIN_URL ?? process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
  const dbName = `ess_bench_${run}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database "${dbName}"`);
  const natsUrl = process.env.TEST_NATS_URL ?? process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
  const prefix = `bench_${run}`;
  const users = await natsUsers(natsUrl, prefix);
  const nc = await connect({ servers: natsUrl, user: users.admin.NATS_USER, pass: users.admin.NATS_PASSWORD });
  return {
    dbUrl: adminUrl.replace(/\/[^/?]+(\?|$)/, `/${dbName}$1`),
    natsUrl,
    prefix,
    names: new Names(prefix),
    users,
    nc,
    async close() {
      const jsm = await nc.jetstreamManager();
      for await (const st of jsm.streams.list()) if (st.config.name.includes(prefix)) await jsm.streams.delete(st.config.name);
      await nc.close();
      await admin.query(`drop database if exists "${dbName}" with (force)`);
      await admin.end();
    },
  };
}
