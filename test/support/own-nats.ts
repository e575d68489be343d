import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { need } from './env';
import { freePort, NatsCredentials } from './system';

interface StartedServer {
  url: string;
  pid: number;
  stop(): Promise<void>;
}
interface NatsAuthScript {
  newAppCredentials(prefix: string): NatsCredentials;
  findNatsServer(): string;
  startNatsServer(o: { bin: string; dir: string; host: string; port: number; installations: { prefix: string; credentials: NatsCredentials }[]; admin: { user: string; password: string } }): Promise<StartedServer>;
}
// eslint-disable-next-line @typescript-eslint/no-var-requires
const natsAuth = require('../../scripts/lib/nats-auth.js') as NatsAuthScript;

/**
 * A nats-server of one test's own (not the run's shared one), with the users of one installation, so the
 * test may stop and start it: `stop()` then `start()` brings it back on the same port with the same
 * JetStream store, as an operator restarting NATS would.
 */
export interface OwnNats {
  url: string;
  prefix: string;
  credentials: NatsCredentials;
  admin: { servers: string; user: string; pass: string };
  /** Stops the server: `SIGTERM` (a clean shutdown) or `SIGKILL` (a crash). */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  start(): Promise<void>;
  /** Stops it for good and removes its store. */
  remove(): Promise<void>;
}

export async function startOwnNats(): Promise<OwnNats> {
  const dir = mkdtempSync(join(tmpdir(), 'ess-own-nats-'));
  const prefix = `t_${need('TEST_RUN_ID')}_own_${randomBytes(3).toString('hex')}`;
  const credentials = natsAuth.newAppCredentials(prefix);
  const admin = { user: 'admin', password: randomBytes(12).toString('hex') };
  const port = await freePort();
  const bin = natsAuth.findNatsServer();
  let server: StartedServer | undefined;
  const start = async (): Promise<void> => {
    server = await natsAuth.startNatsServer({ bin, dir, host: '127.0.0.1', port, installations: [{ prefix, credentials }], admin });
  };
  const stop = async (signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> => {
    const s = server;
    server = undefined;
    if (!s) return;
    if (signal === 'SIGTERM') return s.stop();
    process.kill(s.pid, 'SIGKILL');
    await s.stop();
  };
  await start();
  const url = `nats://127.0.0.1:${port}`;
  return {
    url,
    prefix,
    credentials,
    admin: { servers: url, user: admin.user, pass: admin.password },
    stop,
    start,
    remove: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
