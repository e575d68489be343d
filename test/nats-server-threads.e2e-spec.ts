import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './support/system';

interface NatsAuthScript {
  findNatsServer(): string;
  startNatsServer(o: { bin: string; dir: string; host: string; port: number; installations: never[]; admin: { user: string; password: string } }): Promise<{ pid: number; stop(): Promise<void> }>;
}
// eslint-disable-next-line @typescript-eslint/no-var-requires
const natsAuth = require('../scripts/lib/nats-auth.js') as NatsAuthScript;

/** GOMAXPROCS in the environment of a running process, or undefined. */
const goMaxProcsOf = (pid: number): string | undefined =>
  readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').find((kv) => kv.startsWith('GOMAXPROCS='))?.slice('GOMAXPROCS='.length);

/**
 * The nats-server that npm start, npm test, the benchmarks and npm run cluster start (scripts/lib/nats-auth.js) runs
 * its Go code on one thread on a machine of 2 cores or fewer, and as the operator's GOMAXPROCS says when it is set.
 */
describe("the embedded nats-server's threads", () => {
  const dir = mkdtempSync(join(tmpdir(), 'ess-nats-threads-'));
  const saved = process.env.GOMAXPROCS;

  const started = async (): Promise<string | undefined> => {
    const server = await natsAuth.startNatsServer({
      bin: natsAuth.findNatsServer(),
      dir: join(dir, randomBytes(4).toString('hex')),
      host: '127.0.0.1',
      port: await freePort(),
      installations: [],
      admin: { user: 'admin', password: randomBytes(12).toString('hex') },
    });
    try {
      return goMaxProcsOf(server.pid);
    } finally {
      await server.stop();
    }
  };

  afterEach(() => {
    if (saved === undefined) delete process.env.GOMAXPROCS;
    else process.env.GOMAXPROCS = saved;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs on one thread on a machine of 2 cores or fewer, on every core otherwise', async () => {
    delete process.env.GOMAXPROCS;
    expect(await started()).toBe(availableParallelism() <= 2 ? '1' : undefined);
  });

  it("keeps the operator's GOMAXPROCS", async () => {
    process.env.GOMAXPROCS = '2';
    expect(await started()).toBe('2');
  });
});
