import { ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { alive, eventually, freePort } from './support/system';

const INFRA = join(__dirname, '..', 'scripts', 'lib', 'infra.js');

/**
 * The embedded Postgres `npm start` runs under DATA_DIR when no DATABASE_URL is given and nothing answers on
 * 127.0.0.1:5432 (README, quick start). A terminal's Ctrl-C reaches every process of npm start's process group at
 * once: the Postgres must not be among them, or the apps' graceful stop finds it gone. Each case runs
 * resolvePostgres (scripts/lib/infra.js) as npm start does, in a process of its own group, as in a terminal.
 */
describe('the embedded Postgres of npm start', () => {
  let dataDir: string;
  let localPort: number;
  let embeddedPort: number;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'embedded-pg-'));
    chmodSync(dataDir, 0o711); // as root the server runs as the user postgres, which must reach its directory
    localPort = await freePort(); // nothing listens there: "no server on 5432"
    embeddedPort = await freePort();
  });
  afterAll(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    const pid = postmaster();
    if (pid && alive(pid)) process.kill(pid, 'SIGQUIT');
    rmSync(dataDir, { recursive: true, force: true });
  });

  function postmaster(): number | undefined {
    try {
      return Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    } catch {
      return undefined;
    }
  }

  /** A process of its own group that resolves the Postgres as npm start does, then runs `then` (a function body). */
  function start(then: string): { child: ChildProcess; output: () => string } {
    const script = `
      const { Client } = require('pg');
      const { resolvePostgres } = require(${JSON.stringify(INFRA)});
      (async () => {
        const pg = await resolvePostgres({ dataDir: ${JSON.stringify(dataDir)}, dbName: 'ctrl_c', env: {}, localPort: ${localPort}, embeddedPort: ${embeddedPort} });
        const query = async () => { const c = new Client({ connectionString: pg.url }); await c.connect(); try { return (await c.query('select 1 as one')).rows[0].one; } finally { await c.end(); } };
        console.log('how: ' + pg.how);
        ${then}
      })().catch((e) => { console.log('failed: ' + e.message); process.exit(1); });`;
    const child = spawn(process.execPath, ['-e', script], { cwd: join(__dirname, '..'), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    return { child, output: () => output };
  }

  const exited = (child: ChildProcess): Promise<number | null> => (child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((r) => child.once('exit', (code) => r(code))));

  it('outlives a Ctrl-C to the process group that started it, until that process stops it', async () => {
    const { child, output } = start(`
      process.on('SIGINT', async () => {
        // What the apps' graceful stop does after Ctrl-C: it still uses the database.
        console.log('after Ctrl-C the database answers ' + (await query()));
        await pg.stop();
        console.log('stopped');
        process.exit(0);
      });
      setInterval(() => {}, 60_000); // runs until stopped, as npm start
      console.log('ready ' + (await query()));`);
    await eventually(async () => output().includes('ready 1') || output().includes('failed'), { what: `the embedded Postgres to start\n${output()}`, timeoutMs: 90_000, intervalMs: 200 });
    expect(output()).toContain('ready 1');
    expect(output()).toContain(`how: embedded Postgres on ${embeddedPort}`);

    // Not in the starter's process group nor its session (fields 5 and 6 of /proc/<pid>/stat).
    const pid = postmaster()!;
    const [group, session] = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ').slice(2, 4).map(Number);
    expect(group).not.toBe(child.pid);
    expect(session).not.toBe(child.pid);

    process.kill(-child.pid!, 'SIGINT'); // the terminal's Ctrl-C
    expect(await exited(child)).toBe(0);
    expect(output()).toContain('after Ctrl-C the database answers 1');
    expect(output()).toContain('stopped');
    await eventually(async () => !alive(pid), { what: 'the stopped server to exit' }); // pg_ctl's wait ends as it removes its pid file
  });

  it('is stopped by the next start when a killed one left it running', async () => {
    const first = start(`setInterval(() => {}, 60_000); console.log('ready ' + (await query()));`);
    await eventually(async () => first.output().includes('ready 1') || first.output().includes('failed'), { what: `the first start\n${first.output()}`, timeoutMs: 90_000, intervalMs: 200 });
    expect(first.output()).toContain('ready 1');
    process.kill(-first.child.pid!, 'SIGKILL'); // npm start killed: nothing stops its Postgres
    await exited(first.child);
    const left = postmaster()!;
    expect(alive(left)).toBe(true);

    const second = start(`
      console.log('ready ' + (await query()));
      await pg.stop();
      console.log('stopped');`);
    expect(await exited(second.child)).toBe(0);
    expect(second.output()).toContain('left running by an earlier start');
    expect(second.output()).toContain('ready 1');
    expect(second.output()).toContain('stopped');
    await eventually(async () => !alive(left), { what: 'the stopped server to exit' });
  });

  // As root the server runs as the user postgres (Postgres refuses root); a DATA_DIR under a directory closed to
  // other users (a home of mode 700) is out of its reach.
  (process.getuid?.() === 0 ? it : it.skip)('says what to do when the user postgres cannot reach DATA_DIR', async () => {
    const closed = mkdtempSync(join(tmpdir(), 'embedded-pg-closed-')); // mode 700
    try {
      const script = `require(${JSON.stringify(INFRA)}).resolvePostgres({ dataDir: ${JSON.stringify(closed)}, env: {}, localPort: ${localPort}, embeddedPort: ${embeddedPort} }).then(() => console.log('started'), (e) => console.log('failed: ' + e.message))`;
      const child = spawn(process.execPath, ['-e', script], { cwd: join(__dirname, '..'), stdio: ['ignore', 'pipe', 'ignore'] });
      let output = '';
      child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      await exited(child);
      expect(output).toContain(`failed: the embedded Postgres runs as the user postgres, which cannot reach ${join(closed, 'postgres')}`);
      expect(output).toContain('set DATA_DIR to a directory it can reach, or DATABASE_URL');
    } finally {
      rmSync(closed, { recursive: true, force: true });
    }
  });
});
