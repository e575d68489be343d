import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, freePort, startSystem, System } from './support/system';

/**
 * Ctrl-C in the terminal of `npm start` with its own nats-server (README's quick start): the signal reaches every
 * process of the terminal's process group at once. The runner's graceful stop deletes its partition leases
 * (docs/operations.md, "Graceful stop"), so NATS must still be there while the apps stop.
 */
describe('npm start stopped with Ctrl-C', () => {
  let system: System;
  let dataDir: string;
  let start: ChildProcess | undefined;
  afterAll(async () => {
    if (start && start.exitCode === null && start.signalCode === null) {
      process.kill(-start.pid!, 'SIGKILL');
      await new Promise((r) => start!.once('exit', r));
      // A test that failed half-way: npm start did not stop its nats-server, which has a process group of its own.
      try {
        process.kill(Number(readFileSync(join(dataDir, 'nats', 'nats-server.pid'), 'utf8')), 'SIGKILL');
      } catch {
        // not running
      }
    }
    await system?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('lets the runner release every partition lease before its nats-server stops', async () => {
    system = await startSystem({}, { apps: [] });
    dataDir = mkdtempSync(join(tmpdir(), 'npm-start-ctrl-c-'));
    // No NATS_URL: npm start runs its own nats-server, as on a fresh machine.
    const { NATS_URL: _url, ...rest } = system.env;
    void _url;
    const port = await freePort();
    const partitions = 32;
    const env = {
      ...rest,
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      RUNNER_METRICS_PORT: String(await freePort()),
      DELIVERY_METRICS_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      REGISTRY_DIR: 'off',
      PARTITIONS: String(partitions),
      LOG_LEVEL: 'info',
    };
    // Its own process group, as in a terminal.
    start = spawn(process.execPath, [join(__dirname, '..', 'scripts', 'start.js')], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    start.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    start.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    await eventually(async () => /^ready /m.test(output), { what: `npm start to print ready\n${output.slice(-3000)}`, timeoutMs: 90_000, intervalMs: 200 });
    await eventually(async () => (output.match(/"msg":"partition started"/g) ?? []).length === partitions, { what: 'the runner to start every partition', timeoutMs: 30_000 });

    // The terminal's signal does not reach nats-server: it is not in npm start's process group (field 5 of /proc/<pid>/stat).
    const natsPid = Number(readFileSync(join(dataDir, 'nats', 'nats-server.pid'), 'utf8'));
    const natsGroup = Number(readFileSync(`/proc/${natsPid}/stat`, 'utf8').split(') ')[1].split(' ')[2]);
    expect(natsGroup).not.toBe(start.pid);

    process.kill(-start.pid!, 'SIGINT');
    // 'close', not 'exit': the last lines npm start wrote may still be in its pipes when it exits (CI once read 24 of 32).
    const code = await new Promise<number | null>((r) => start!.once('close', (c) => r(c)));
    expect(code).toBe(0);
    expect((output.match(/"msg":"partition lease released"/g) ?? []).length).toBe(partitions);
  });
});
