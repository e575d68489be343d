import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, freePort } from './support/system';

const CLUSTER = join(__dirname, '..', 'scripts', 'cluster.js');

/** `npm run cluster` (scripts/cluster.js): one per DATA_DIR, as npm start. */
describe('npm run cluster with the DATA_DIR of one still running', () => {
  let dataDir: string;
  let silent: Server;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'cluster-start-'));
    // A Postgres that takes connections and never answers holds the first cluster in its migration, before any
    // NATS node or app is started, so that stopping it leaves nothing behind.
    silent = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    silent?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses to start (exit 1, naming the one running) and starts no NATS node on its stores', async () => {
    const { port } = silent.address() as { port: number };
    const env = { ...process.env, DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/cluster`, DATA_DIR: dataDir, PORT: String(await freePort()) };
    const first = spawn(process.execPath, [CLUSTER], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    first.stderr!.resume();
    try {
      await eventually(async () => existsSync(join(dataDir, 'cluster', 'npm-run-cluster.pid')) && sockets.length > 0, { what: 'the first cluster to claim its DATA_DIR and wait for Postgres' });
      const second = spawn(process.execPath, [CLUSTER], { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      second.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      // One that does not refuse waits for Postgres as the first does: it is stopped, and its exit code is not 1.
      const timer = setTimeout(() => second.kill('SIGKILL'), 30_000);
      const code = await new Promise<number | null>((r) => second.once('close', (c) => r(c)));
      clearTimeout(timer);
      expect(stderr).toMatch(new RegExp(`^npm run cluster: another npm run cluster \\(pid ${first.pid}\\) is running with DATA_DIR ${dataDir}: stop it first, or give this one another DATA_DIR$`, 'm'));
      expect(stderr).not.toMatch(/^(postgres|nats): /m);
      expect(code).toBe(1);
    } finally {
      first.kill('SIGINT');
      await new Promise((r) => first.once('exit', r));
    }
    // Ctrl-C released it: the next one may start.
    expect(existsSync(join(dataDir, 'cluster', 'npm-run-cluster.pid'))).toBe(false);
  });
});
