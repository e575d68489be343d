/**
 * What the delivery benchmarks share: their knobs, a free port, polling, and
 * the NATS users of a run (an admin that creates the streams, as the api does,
 * and the delivery app's own).
 */
import { join } from 'node:path';
import { AddressInfo, createServer as netServer } from 'node:net';
import { loadConfig } from '@app/config';
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
