import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { client } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { alive, eventually, freePort, startSystem, System } from './support/system';
import { Receiver } from './events.helpers';

/** The run's NATS users of a system, in the form npm start takes them when NATS_URL is set (NATS_<APP>_USER, …). */
function natsUsers(system: System): Record<string, string> {
  const out: Record<string, string> = {};
  for (const app of ['api', 'runner', 'delivery'] as const) {
    const env = system.appEnv(app);
    const key = app.toUpperCase();
    Object.assign(out, { [`NATS_${key}_USER`]: env.NATS_USER, [`NATS_${key}_PASSWORD`]: env.NATS_PASSWORD, [`NATS_${key}_INBOX_PREFIX`]: env.NATS_INBOX_PREFIX });
  }
  return out;
}

type AppName = 'api' | 'runner' | 'delivery';

/**
 * `npm start` (scripts/start.js) as a supervisor, against the real apps: each
 * app is killed with SIGKILL while HTTP requests flow in; it is restarted, the
 * other apps go on, and every accepted request's event reaches the webhook.
 */
describe('npm start restarts a crashed app', () => {
  let system: System;
  let start: ChildProcess;
  let stderr = '';
  let stdout = '';
  let receiver: Receiver;
  let dataDir: string;

  beforeAll(async () => {
    system = await startSystem({}, { apps: [] });
    receiver = await new Receiver().start();
    dataDir = mkdtempSync(join(tmpdir(), 'npm-start-'));
    const port = await freePort();
    const env: Record<string, string> = {
      ...system.env,
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      RUNNER_METRICS_PORT: String(await freePort()),
      DELIVERY_METRICS_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      REGISTRY_DIR: 'off',
      HTTP_RATE_PER_SEC: '0',
      // What a crashed replica held comes back after these (default 30 s).
      INVOCATION_ACK_WAIT_MS: '3000',
      DELIVERY_ACK_WAIT_MS: '3000',
      LOG_LEVEL: 'warn',
      // The run's NATS server, as an operator's own: each app with its own user (NATS_<APP>_USER…).
      ...natsUsers(system),
    };
    // Its own process group, as in a terminal: Ctrl-C there signals npm start and every app at once.
    start = spawn(process.execPath, [join(__dirname, '..', 'scripts', 'start.js')], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    start.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    start.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await eventually(async () => /^ready /m.test(stdout), { what: `npm start to print ready\n${stderr.slice(-3000)}`, timeoutMs: 90_000, intervalMs: 200 });
  });
  afterAll(async () => {
    if (start && start.exitCode === null) {
      start.kill('SIGINT');
      await new Promise((r) => start.once('exit', r));
    }
    await receiver?.stop();
    await system?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const pidOf = (app: AppName): number => {
    const all = [...stderr.matchAll(new RegExp(`^${app} started \\(pid (\\d+)\\)`, 'gm'))];
    return Number(all.at(-1)![1]);
  };

  it('keeps accepting requests and loses no event while each app is killed in turn; Ctrl-C stops everything', async () => {
    const key = /API key: (\S+)/.exec(stdout)![1];
    // The dashboard's address is printed beside the API's, and answers its page.
    const dashboard = /^dashboard (\S+)/m.exec(stdout)?.[1] ?? '';
    expect(dashboard).toMatch(/^http:\/\/\S+\/ui\/$/);
    expect(await (await fetch(dashboard)).text()).toContain('<div id="app">');
    const api = client({ ...system, baseUrl: /^ready (\S+)/m.exec(stdout)![1] }, key);
    const created = await api.post('/sources', { component_code: HTTP_SOURCE });
    expect(created.status).toBe(200);
    const endpoint: string = created.body.data.configured_props.http.endpoint_url;
    const wh = (await api.post('/webhooks', { url: receiver.url })).body.data.id;
    expect((await api.post('/subscriptions', { emitter_id: created.body.data.id, listener_id: wh })).status).toBe(200);
    const seqs = (): Set<number> => new Set(receiver.received.map((r) => (JSON.parse(r.body) as { seq: number }).seq));
    // The whole path works before the load starts (the runner has deployed the source).
    await eventually(async () => {
      await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ seq: -1 }) });
      return seqs().has(-1);
    }, { what: 'the first event at the webhook', timeoutMs: 60_000, intervalMs: 1000 });

    // Load: 4 clients, each request retried until it is accepted, as a client would.
    let phase: AppName | 'steady' = 'steady';
    const failures: Record<string, string[]> = {};
    const accepted: number[] = [];
    let next = 0;
    let loading = true;
    const worker = async (): Promise<void> => {
      while (loading) {
        const seq = next++;
        for (;;) {
          const res = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ seq }) }).then(
            (r) => String(r.status),
            (e: Error & { cause?: { code?: string } }) => e.cause?.code ?? e.message,
          );
          if (res === '200') break;
          (failures[phase] ??= []).push(res);
          await new Promise((r) => setTimeout(r, 100));
        }
        accepted.push(seq);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const workers = Promise.all(Array.from({ length: 4 }, worker));
    await new Promise((r) => setTimeout(r, 1000));

    const downtime: Record<string, number> = {};
    for (const app of ['delivery', 'runner', 'api'] as AppName[]) {
      phase = app;
      const pid = pidOf(app);
      const before = accepted.length;
      const killedAt = Date.now();
      process.kill(pid, 'SIGKILL');
      await eventually(async () => stderr.includes(`${app} exited: killed by SIGKILL`), { what: `npm start to notice ${app}'s death` });
      await eventually(async () => pidOf(app) !== pid && stderr.includes(`${app} is healthy again (pid ${pidOf(app)})`), { what: `${app} restarted and healthy`, timeoutMs: 60_000 });
      downtime[app] = Date.now() - killedAt;
      expect(alive(pid)).toBe(false);
      expect(alive(pidOf(app))).toBe(true);
      // Requests go on being accepted after the restart.
      await eventually(async () => accepted.length >= before + 20, { what: `requests accepted after ${app} came back` });
    }
    phase = 'steady';
    await new Promise((r) => setTimeout(r, 500));
    loading = false;
    await workers;
    process.stdout.write(`npm start supervisor test: ${accepted.length} requests accepted; restart (kill → healthy) ms: ${JSON.stringify(downtime)}; refused while down: ${JSON.stringify(Object.fromEntries(Object.entries(failures).map(([k, v]) => [k, v.length])))}\n`);

    // Killing the runner or delivery never stops the api from accepting requests.
    expect(failures.delivery ?? []).toEqual([]);
    expect(failures.runner ?? []).toEqual([]);
    expect(failures.steady ?? []).toEqual([]);
    // While the api itself restarts, requests are refused at the socket, never answered with an error.
    for (const f of failures.api ?? []) expect(f).toMatch(/^(ECONNREFUSED|ECONNRESET|UND_ERR_SOCKET|other side closed|fetch failed)$/);
    // Every accepted request's event arrives (duplicates allowed: at-least-once).
    await eventually(async () => accepted.every((s) => seqs().has(s)), { what: `all ${accepted.length} accepted events at the webhook`, timeoutMs: 90_000, intervalMs: 500 });

    // Ctrl-C (SIGINT to the whole process group): every app stops, nothing is restarted or reported as a crash, npm start exits 0.
    const pids = (['api', 'runner', 'delivery'] as AppName[]).map(pidOf);
    const logged = stderr.length;
    process.kill(-start.pid!, 'SIGINT');
    // 'close', not 'exit': the last lines npm start wrote may still be in its pipes when it exits.
    const code = await new Promise<number | null>((r) => start.once('close', (c) => r(c)));
    expect(code).toBe(0);
    expect(pids.map(alive)).toEqual([false, false, false]);
    expect(stderr.slice(logged)).not.toMatch(/exited:|started \(pid/);
    expect(stderr).not.toMatch(/failed \d+ times in a row/);
  });
});

describe('npm start with an app that cannot start', () => {
  let system: System;
  let dataDir: string;
  beforeAll(async () => {
    system = await startSystem({}, { apps: [] });
    dataDir = mkdtempSync(join(tmpdir(), 'npm-start-'));
  });
  afterAll(async () => {
    await system?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('stops everything after repeated failed starts and says why', async () => {
    // Something else holds delivery's metrics port: delivery stops at start, every time.
    const { createServer } = await import('node:net');
    const squatter = createServer((s) => s.destroy());
    const taken = await freePort();
    await new Promise<void>((r) => squatter.listen(taken, '127.0.0.1', r));
    try {
      const port = await freePort();
      const env = { ...system.env, ...natsUsers(system), PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, RUNNER_METRICS_PORT: String(await freePort()), DELIVERY_METRICS_PORT: String(taken), DATA_DIR: dataDir, REGISTRY_DIR: 'off' };
      const proc = spawn(process.execPath, [join(__dirname, '..', 'scripts', 'start.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      let stdout = '';
      proc.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
      proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((r) => proc.once('close', (c) => r(c)));
      expect(code).toBe(1);
      expect(stdout).not.toMatch(/^ready /m);
      const fatal = stderr.split('\n').find((l) => l.startsWith('delivery failed 5 times in a row while starting'));
      expect(fatal).toMatch(/the last time: exit code 1 after [\d.]+ s; last output: .*DELIVERY_METRICS_PORT/);
      expect(stderr.split('\n').filter((l) => /^delivery exited: exit code 1 .*restarting in/.test(l))).toHaveLength(4);
      // The other apps were stopped with it.
      for (const app of ['api', 'runner']) {
        const pid = Number(new RegExp(`^${app} started \\(pid (\\d+)\\)`, 'm').exec(stderr)![1]);
        expect(() => process.kill(pid, 0)).toThrow();
      }
    } finally {
      squatter.close();
    }
  });
  it('an api whose PORT another instance holds is not taken for healthy: no ready line, it stops after 5 failed starts', async () => {
    // Another instance on PORT that answers /healthz as a healthy api would.
    const { createServer } = await import('node:http');
    const other = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}'));
    const port = await freePort();
    await new Promise<void>((r) => other.listen(port, '0.0.0.0', r));
    try {
      const env = { ...system.env, ...natsUsers(system), PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, RUNNER_METRICS_PORT: String(await freePort()), DELIVERY_METRICS_PORT: String(await freePort()), DATA_DIR: dataDir, REGISTRY_DIR: 'off' };
      const proc = spawn(process.execPath, [join(__dirname, '..', 'scripts', 'start.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      let stdout = '';
      proc.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
      proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      // One that takes the other instance's answers for its api's would run on, restarting it for ever.
      const timer = setTimeout(() => proc.kill('SIGINT'), 120_000);
      const code = await new Promise<number | null>((r) => proc.once('close', (c) => r(c)));
      clearTimeout(timer);
      expect(stdout).not.toMatch(/^ready /m);
      expect(stderr).not.toMatch(/^api is healthy again/m);
      expect(stderr).toMatch(new RegExp(`^api failed 5 times in a row while starting; the last time: exit code 1 after [\\d.]+ s; last output: .*(port ${port} is already in use|address already in use [\\d.:]+:${port})`, 'm'));
      expect(code).toBe(1);
    } finally {
      other.close();
    }
  });
  it('a configuration error stops it before it starts anything: no Postgres, nats-server or app', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'npm-start-config-'));
    try {
      // No NATS_URL: npm start runs its own nats-server (under DATA_DIR/nats), as on a fresh machine.
      const { NATS_URL: _url, ...rest } = system.env;
      void _url;
      const env = { ...rest, DATA_DIR: dir, REGISTRY_DIR: 'off', HTTP_MAX_BODY_BYTES: '1000' };
      const proc = spawn(process.execPath, [join(__dirname, '..', 'scripts', 'start.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((r) => proc.once('close', (c) => r(c)));
      expect(stderr).toMatch(/^configuration error: HTTP_MAX_BODY_BYTES must be at least 1024, got 1000$/m);
      expect(code).toBe(78);
      // No nats-server of its own (its config would be under DATA_DIR/nats).
      const natsOfDir = (): number[] =>
        readdirSync('/proc')
          .filter((p) => /^\d+$/.test(p))
          .filter((p) => {
            try {
              return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(join(dir, 'nats'));
            } catch {
              return false;
            }
          })
          .map(Number);
      // README "Configuration": checked before anything starts (it used to start a nats-server first, then stop it).
      expect(stderr).not.toMatch(/^(postgres|nats): /m);
      expect(natsOfDir()).toEqual([]);
      expect(stderr).not.toMatch(/ started \(pid/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('beside a running npm start: a second runner (npm run start:runner, as README writes it), a second npm start', () => {
  let system: System;
  let dataDir: string;
  const procs: ChildProcess[] = [];
  let rest: Record<string, string>;
  let firstRunner: number;
  beforeAll(async () => {
    system = await startSystem({}, { apps: [] });
    dataDir = mkdtempSync(join(tmpdir(), 'npm-start-replica-'));
    // No NATS_URL: npm start runs its own nats-server with a user per app, as on a fresh machine.
    const { NATS_URL: _url, ...others } = system.env;
    void _url;
    rest = others;
    const port = await freePort();
    firstRunner = await freePort();
    const env = { ...rest, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, RUNNER_METRICS_PORT: String(firstRunner), DELIVERY_METRICS_PORT: String(await freePort()), DATA_DIR: dataDir, REGISTRY_DIR: 'off', LEASE_TTL_MS: '3000' };
    const start = spawn(process.execPath, [join(__dirname, '..', 'scripts', 'start.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    procs.push(start);
    let stdout = '';
    start.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    start.stderr!.resume();
    await eventually(async () => /^ready /m.test(stdout), { what: 'npm start to be ready', timeoutMs: 90_000 });
  });
  afterAll(async () => {
    for (const p of procs.reverse()) {
      if (p.exitCode !== null || p.signalCode !== null) continue;
      await new Promise<void>((r) => {
        p.once('exit', () => r());
        // The runner's group (npm and its child); npm start stops its own apps.
        if (p.spawnargs[0] === 'npm') process.kill(-p.pid!, 'SIGTERM');
        else p.kill('SIGTERM');
      });
    }
    await system?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("joins npm start's own nats-server as the runner's NATS user, and the partitions are split between the two runners", async () => {
    const second = await freePort();
    const { NATS_USER: _u, NATS_PASSWORD: _p, NATS_INBOX_PREFIX: _i, ...plain } = rest;
    void [_u, _p, _i];
    // Its own process group: stopping it stops npm and the runner npm started.
    const runner = spawn('npm', ['run', '--silent', 'start:runner'], { cwd: join(__dirname, '..'), env: { ...plain, DATA_DIR: dataDir, RUNNER_METRICS_PORT: String(second), LEASE_TTL_MS: '3000' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    procs.push(runner);
    let said = '';
    runner.stderr!.on('data', (d: Buffer) => (said += d.toString()));
    runner.stdout!.resume();
    await eventually(async () => /^runner: joining npm start's installation: NATS nats:\/\/127\.0\.0\.1:\d+ as user runner/m.test(said), { what: 'the runner to say whose NATS it joins' });
    const total = Number(rest.PARTITIONS ?? 32);
    const partitions = async (metricsPort: number): Promise<number> => {
      const text = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text(), () => '');
      return Number(/^runner_partitions_owned (\d+)/m.exec(text)?.[1] ?? -1);
    };
    await eventually(
      async () => {
        const [a, b] = [await partitions(firstRunner), await partitions(second)];
        return a > 0 && b > 0 && a + b === total;
      },
      { what: 'the partitions split between both runners', timeoutMs: 60_000 },
    );
  });

  it('a second npm start with the same DATA_DIR refuses to start and leaves the running one alone', async () => {
    const natsPid = Number(readFileSync(join(dataDir, 'nats', 'nats-server.pid'), 'utf8'));
    const port = await freePort();
    const env = { ...rest, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, RUNNER_METRICS_PORT: String(await freePort()), DELIVERY_METRICS_PORT: String(await freePort()), DATA_DIR: dataDir, REGISTRY_DIR: 'off' };
    const again = spawn(process.execPath, [join(__dirname, '..', 'scripts', 'start.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    again.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    again.stdout!.resume();
    // One that does not refuse would run on: it is stopped, and the exit code below is not 1.
    const timer = setTimeout(() => again.kill('SIGKILL'), 60_000);
    const code = await new Promise<number | null>((r) => again.once('close', (c) => r(c)));
    clearTimeout(timer);
    expect(code).toBe(1);
    expect(stderr).toMatch(new RegExp(`^npm start: another npm start \\(pid ${procs[0].pid}\\) is running with DATA_DIR ${dataDir}: stop it first`, 'm'));
    expect(stderr).not.toMatch(/^nats: /m);
    // The first one's nats-server and runner go on.
    expect(alive(natsPid)).toBe(true);
    const health = (await fetch(`http://127.0.0.1:${firstRunner}/healthz`).then((r) => r.json())) as { partitions: number[] };
    expect(health.partitions.length).toBeGreaterThan(0);
  });

  it('node scripts/nats-auth.js rotate refuses while it runs and leaves the credentials as they are', () => {
    const file = join(dataDir, 'nats', 'credentials.json');
    const before = readFileSync(file, 'utf8');
    const r = spawnSync(process.execPath, [join(__dirname, '..', 'scripts', 'nats-auth.js'), 'rotate'], { env: { ...process.env, DATA_DIR: dataDir }, encoding: 'utf8' });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 1, stderr: `nats-auth: npm start (pid ${procs[0].pid}) is running with these credentials: stop it first (Ctrl-C), rotate, then start it again\n` });
    expect(readFileSync(file, 'utf8')).toBe(before);
  });

  it('npm run start:runner with a DATA_DIR no npm start runs with says which NATS it connects to instead', () => {
    const dir = mkdtempSync(join(tmpdir(), 'npm-start-none-'));
    try {
      // LOG_LEVEL=loud stops the app at its configuration check, before it connects anywhere.
      const { NATS_URL: _url, ...plain } = process.env;
      void _url;
      const r = spawnSync(process.execPath, [join(__dirname, '..', 'scripts', 'start-app.js'), 'runner'], { env: { ...plain, DATA_DIR: dir, LOG_LEVEL: 'loud' }, encoding: 'utf8' });
      expect(r.stderr.split('\n')[0]).toBe(`runner: no npm start runs with DATA_DIR ${dir}; NATS_URL is unset: connecting to its default, nats://127.0.0.1:4222`);
      expect(r.status).toBe(78);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
