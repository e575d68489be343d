import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import type { Duplex } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxPool } from '../pool';
import type { ExecuteTask } from '../types';
import { isolationSettings } from '../test-support/isolation';
import { setUpIsolation } from './setup';

/** The sandbox process of an account, for real: bubblewrap, the uid switch, the permission model, the egress proxy. */
describe('SandboxPool with SANDBOX_ISOLATION=namespaces', () => {
  let pool: SandboxPool;
  let open: Server;
  let closed: Server;
  let cache: string;
  const port = (s: Server) => (s.address() as { port: number }).port;
  // A WebSocket server (RFC 6455 handshake, one text frame) that the egress policy allows.
  const upgraded = new Set<Duplex>();
  const ws = createHttpServer((_q, r) => r.writeHead(426).end());
  ws.on('upgrade', (req, socket) => {
    upgraded.add(socket);
    const accept = createHash('sha1').update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    socket.write(Buffer.concat([Buffer.from([0x81, 5]), Buffer.from('hello')]));
    socket.on('error', () => undefined);
  });

  beforeAll(async () => {
    const listen = (s: Server) => new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    open = createServer((c) => c.end('hello from an allowed service'));
    closed = createServer((c) => c.end('must not be reached'));
    await listen(open);
    await listen(closed);
    await new Promise<void>((r) => ws.listen(0, '127.0.0.1', () => r()));
    cache = mkdtempSync(join(tmpdir(), 'ess-iso-'));
    const isolation = await setUpIsolation(
      isolationSettings(cache, { sandboxThreadsPerAccount: 1, sandboxMemoryMb: 256, sandboxIdleMs: 60_000, sandboxMaxProcesses: 8, sandboxEgressAllow: `127.0.0.1:${port(open)},127.0.0.1:${(ws.address() as { port: number }).port}` }),
    );
    expect(isolation.mode).toBe('namespaces');
    pool = new SandboxPool({ threads: 1, heapMb: 64, vmTimeout: 'adaptive', npmCacheDir: join(cache, 'npm'), isolation: isolation.options });
  });
  afterAll(async () => {
    await pool?.close();
    open?.close();
    closed?.close();
    for (const s of upgraded) s.destroy();
    ws.close();
  });

  const run = (account: string, code: string, event: unknown = {}) => {
    const task: ExecuteTask = { kind: 'execute', account, sourceId: 'dc_t', invocationId: `i${Math.random()}`, codeHash: code, code, method: 'run', props: {}, db: {}, event, timeoutMs: 10_000, limits: { dbMaxBytes: 1e6, eventMaxBytes: 1e6, emitsPerInvocation: 10 } };
    return pool.execute(task);
  };
  const dial = (p: number) => `module.exports = { name: "d", version: "1", async run() { this.$emit(await new Promise((r) => { const s = require("net").connect(${p}, "127.0.0.1"); let got = ""; s.on("data", (d) => (got += d)); s.on("end", () => r(got)); s.on("error", (e) => r(e.code + ": " + e.message)); })); } };`;

  it('connects through the egress proxy where the policy allows, and refuses elsewhere', async () => {
    expect((await run('u_a', dial(port(open)))).emits[0].event).toBe('hello from an allowed service');
    expect(String((await run('u_a', dial(port(closed)))).emits[0].event)).toMatch(/^ECONNREFUSED: .*loopback/);
  });

  it('has a WebSocket global whose connections go through the egress proxy, and imports npm ES modules with Node', async () => {
    const wsPort = (ws.address() as { port: number }).port;
    const code = `import { chunk } from "lodash-es"; import _ from "lodash-es";
      export default { name: "w", version: "1", async run() {
        const got = await new Promise((resolve) => { const s = new WebSocket("ws://127.0.0.1:${wsPort}/"); s.onmessage = (e) => { resolve(e.data); s.close(); }; s.onerror = () => resolve("error"); });
        this.$emit({ got, chunk: chunk([1, 2, 3], 2), same: _.chunk === chunk });
      } };`;
    const d = await pool.describe(code, { timeoutMs: 120_000, account: 'u_a' });
    expect(d.error).toBeUndefined();
    const task: ExecuteTask = { kind: 'execute', account: 'u_a', sourceId: 'dc_t', invocationId: 'ws1', codeHash: 'ws1', code, method: 'run', props: {}, db: {}, event: {}, timeoutMs: 20_000, limits: { dbMaxBytes: 1e6, eventMaxBytes: 1e6, emitsPerInvocation: 10 }, dependencyVersions: d.dependencyVersions };
    const r = await pool.execute(task);
    expect(r.error).toBeUndefined();
    expect(r.emits[0].event).toEqual({ got: 'hello', chunk: [[1, 2], [3]], same: true });
  }, 180_000);

  it('runs each account as its own unprivileged uid with its own /tmp', async () => {
    const code = `module.exports = { name: "w", version: "1", async run(e) { const fs = require("fs"); if (e.write) fs.writeFileSync("/tmp/f", e.write); this.$emit({ uid: process.getuid(), f: fs.existsSync("/tmp/f") ? fs.readFileSync("/tmp/f", "utf8") : null }); } };`;
    const a = (await run('u_a', code, { write: 'a' })).emits[0].event as { uid: number; f: string };
    const b = (await run('u_b', code)).emits[0].event as { uid: number; f: string | null };
    expect(a.f).toBe('a');
    expect(b.f).toBeNull();
    if (process.getuid?.() === 0) {
      expect(a.uid).toBeGreaterThanOrEqual(200_000);
      expect(b.uid).not.toBe(a.uid);
    }
  });

  it('runs a batch in the account\'s sandbox, each respond() answered at once with its index; a sandbox killed mid-batch fails the batch as a whole', async () => {
    const code = `module.exports = { name: "b", version: "1", props: { http: { type: "$.interface.http", customResponse: true } }, async run(e) {
      if (e.kill) process.kill(process.pid, "SIGKILL");
      this.http.respond({ status: 200, body: String(e.n) });
      this.$emit(e.n);
    } };`;
    const batch = (events: unknown[]): Parameters<SandboxPool['executeBatch']>[0] => ({ kind: 'executeBatch', account: 'u_batch', sourceId: 'dc_b', items: events.map((event, i) => ({ invocationId: `b${i}`, event })), codeHash: code, code, props: {}, db: {}, timeoutMs: 10_000, limits: { dbMaxBytes: 1e6, eventMaxBytes: 1e6, emitsPerInvocation: 10 } });
    const answers: [number, string | undefined][] = [];
    const out = await pool.executeBatch(batch([{ n: 1 }, { n: 2 }, { n: 3 }]), { onResponse: (i, r) => answers.push([i, r.body]) });
    expect('results' in out && out.results.map((r) => r.emits[0].event)).toEqual([1, 2, 3]);
    expect(answers).toEqual([[0, '1'], [1, '2'], [2, '3']]);
    const killed = await pool.executeBatch(batch([{ n: 1 }, { kill: true }, { n: 3 }]));
    expect('failed' in killed && killed.failed.name).toBe('SandboxCrashError');
  });

  it('refuses worker threads to component code: one started with its own execArgv would run outside the permission model', async () => {
    const code = `module.exports = { name: "w", version: "1", async run() {
      const tries = {};
      try { new (require("worker_threads").Worker)("require('child_process').execSync('id')", { eval: true, execArgv: [] }); tries.cjs = "started"; } catch (e) { tries.cjs = e.code + ": " + e.message; }
      try { require("child_process").execSync("id"); tries.exec = "ran"; } catch (e) { tries.exec = e.code; }
      this.$emit(tries);
    } };`;
    const r = await run('u_w', code);
    expect(r.error).toBeUndefined();
    expect(r.emits[0].event).toEqual({
      cjs: 'ERR_ACCESS_DENIED: worker threads are not available to component code in the sandbox',
      exec: 'ERR_ACCESS_DENIED',
    });
  });

  it("refuses V8's flags to component code: --allow-natives-syntax would hand it V8's test intrinsics", async () => {
    const code = `module.exports = { name: "f", version: "1", async run() {
      const tries = {};
      try { require("v8").setFlagsFromString("--allow-natives-syntax"); tries.flags = "set"; } catch (e) { tries.flags = e.code + ": " + e.message; }
      try { tries.natives = new Function("return %IsBeingInterpreted()")(); } catch (e) { tries.natives = e.name; }
      this.$emit(tries);
    } };`;
    const r = await run('u_flags', code);
    expect(r.error).toBeUndefined();
    expect(r.emits[0].event).toEqual({ flags: "ERR_ACCESS_DENIED: V8's flags cannot be changed by component code in the sandbox", natives: 'SyntaxError' });
  });

  it('ends only the account\'s sandbox when it is killed, and starts a new one', async () => {
    const killed = await run('u_a', 'module.exports = { name: "k", version: "1", async run() { process.kill(process.pid, "SIGKILL"); } };');
    expect(killed.error).toMatchObject({ name: 'SandboxCrashError', message: expect.stringContaining('killed (SIGKILL)') });
    expect((await run('u_a', dial(port(open)))).error).toBeUndefined();
  });

  it("restarts an account's sandbox process at once: what its code left is gone, and the next process connects through the egress proxy", async () => {
    const mark = `module.exports = { name: "m", version: "1", async run() { await new Promise((r) => setTimeout(r, 500)); this.$emit(globalThis.__mark = (globalThis.__mark ?? 0) + 1); } };`;
    expect((await run('u_restart', mark)).emits[0].event).toBe(1);
    const again = run('u_restart', mark);
    expect(pool.restartSandboxes(['u_restart', 'u_none'])).toBe(1);
    // Started before the stopped process's exit is handled: its proxy, closing, once removed this one's socket.
    const next = run('u_restart', dial(port(open)));
    expect((await again).emits[0].event).toBe(1);
    expect((await next).emits[0].event).toBe('hello from an allowed service');
  });

  it("retires an account's sandbox process: new runs go to a new one at once, runs in flight finish there once, then what they left stops", async () => {
    const paths: string[] = [];
    const heard = (req: { url?: string }) => paths.push(req.url ?? '');
    ws.on('request', heard);
    const base = `http://127.0.0.1:${(ws.address() as { port: number }).port}`;
    const count = (path: string) => paths.filter((p) => p === path).length;
    const until = async (check: () => boolean, what: string, timeoutMs = 10_000) => {
      for (const end = Date.now() + timeoutMs; !check(); await new Promise((r) => setTimeout(r, 50))) if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    };
    const gen = 'globalThis.__gen ??= Math.random()';
    const leave = `module.exports = { name: "l", version: "1", async run() { setInterval(() => fetch("${base}/stray").catch(() => {}), 50); this.$emit(${gen}); } };`;
    const busy = `module.exports = { name: "b", version: "1", async run(e) { await fetch("${base}/busy-" + e.n).catch(() => {}); await new Promise((r) => setTimeout(r, e.waitMs ?? 1500)); this.$emit(${gen}); } };`;
    try {
      const left = (await run('u_retire', leave)).emits[0].event;
      await until(() => count('/stray') > 2, 'the interval left behind');
      const inFlight = run('u_retire', busy, { n: 1 });
      await until(() => count('/busy-1') === 1, 'the busy run to start');
      expect(pool.retireSandboxes(['u_retire', 'u_none'])).toBe(1);
      const next = run('u_retire', busy, { n: 2 });
      // The run in flight finished where it was, once; the next one ran at once on a new process.
      const [first, second] = await Promise.all([inFlight, next]);
      expect([first.error, first.emits.map((e) => e.event)]).toEqual([undefined, [left]]);
      expect(second.error).toBeUndefined();
      expect(second.emits[0].event).not.toBe(left);
      expect([count('/busy-1'), count('/busy-2')]).toEqual([1, 1]);
      // Its tasks done, the retired process stopped, and the interval with it.
      let seen = count('/stray');
      let quietSince = Date.now();
      await until(() => {
        if (count('/stray') !== seen) [seen, quietSince] = [count('/stray'), Date.now()];
        return Date.now() - quietSince > 1000;
      }, 'the interval to stop');
      expect(pool.stats()).toMatchObject({ queueSize: 0 });

      // Retired again and again while each retired process still runs a task: four retired processes per account at
      // most, so the fifth retirement stops the oldest, whose run runs again on the newest process.
      const runs = [3, 4, 5, 6, 7].map((n) => ({ n, done: undefined as ReturnType<typeof run> | undefined }));
      for (const r of runs) {
        r.done = run('u_retire', busy, { n: r.n, waitMs: 8000 });
        await until(() => count(`/busy-${r.n}`) === 1, `run ${r.n} to start`);
        expect(pool.retireSandboxes(['u_retire'])).toBe(1);
      }
      const done = await Promise.all(runs.map((r) => r.done));
      expect(done.map((r) => r?.error)).toEqual(runs.map(() => undefined));
      expect(runs.map((r) => count(`/busy-${r.n}`))).toEqual([2, 1, 1, 1, 1]);
    } finally {
      ws.off('request', heard);
    }
  });

  it('runs a run again after three restarts of its process at most, then fails it', async () => {
    // Each attempt dials the allowed service once it runs: its process is restarted again at once.
    let attempts = 0;
    const restartOnDial = () => {
      attempts++;
      pool.restartSandboxes(['u_churn']);
    };
    open.on('connection', restartOnDial);
    const code = `module.exports = { name: "r", version: "1", async run() { require("net").connect(${port(open)}, "127.0.0.1").on("error", () => {}); await new Promise((r) => setTimeout(r, 60_000)); } };`;
    try {
      const out = await pool.execute({ kind: 'execute', account: 'u_churn', sourceId: 'dc_c', invocationId: 'i_churn', codeHash: code, code, method: 'run', props: {}, db: {}, event: {}, timeoutMs: 90_000, limits: { dbMaxBytes: 1e6, eventMaxBytes: 1e6, emitsPerInvocation: 10 } });
      expect(out.error).toMatchObject({ name: 'SandboxRestartedError' });
      expect(attempts).toBe(4);
    } finally {
      open.off('connection', restartOnDial);
    }
  });

  it("runs again, one at a time, the runs in flight when one blocked the account's process: only the blocker fails", async () => {
    // Each run answers `respond()` first: the next run is sent once the previous one is running in the sandbox.
    const start = (account: string, body: string, timeoutMs: number) => {
      const code = `module.exports = { name: "s", version: "1", props: { http: { type: "$.interface.http", customResponse: true } }, async run() { this.http.respond({ status: 200 }); ${body} } };`;
      let running!: () => void;
      const started = new Promise<void>((r) => (running = r));
      const done = pool.execute({ kind: 'execute', account, sourceId: 'dc_s', invocationId: `i${Math.random()}`, codeHash: code, code, method: 'run', props: {}, db: {}, event: {}, timeoutMs, limits: { dbMaxBytes: 1e6, eventMaxBytes: 1e6, emitsPerInvocation: 10 } }, { onResponse: () => running() });
      return { started, done };
    };
    const sleep = (ms: number) => `await new Promise((r) => setTimeout(r, ${ms}));`;
    const waiter = `${sleep(300)} this.$emit({ waited: true });`;
    // The blocker blocks after an await (beyond vm's timeout); a waiter's timer cannot fire while the thread is
    // blocked. Both are run again: the blocker, alone in flight then, is stopped again and blamed.
    const blocker = start('u_stop', `${sleep(100)} for (;;) {}`, 1000);
    await blocker.started;
    const after = start('u_stop', waiter, 5000);
    expect((await blocker.done).error).toMatchObject({ name: 'TimeoutError', message: 'run timed out after 1000 ms (its sandbox process was stopped)' });
    // Before, the waiter failed beside it with a SandboxCrashError and was never run again.
    const waited = await after.done;
    expect(waited.error).toBeUndefined();
    expect(waited.emits.map((e) => e.event)).toEqual([{ waited: true }]);

    // A waiter sent first (once, the one blamed) and code that blocks at once: run again guarded, the blocker is
    // ended by vm's timeout without a second stop.
    const before = start('u_stop2', waiter, 1000);
    await before.started;
    const spinner = start('u_stop2', 'for (;;) {}', 1000);
    const [first, spun] = await Promise.all([before.done, spinner.done]);
    expect(first.error).toBeUndefined();
    expect(first.emits.map((e) => e.event)).toEqual([{ waited: true }]);
    expect(spun.error).toMatchObject({ name: 'TimeoutError', message: 'run timed out after 1000 ms' });
  });

  it('stops a sandbox over its memory limit, naming the limit', async () => {
    const out = await run('u_a', 'module.exports = { name: "m", version: "1", async run() { const k = []; for (;;) k.push(Buffer.alloc(8 << 20, 1)); } };');
    expect(out.error).toMatchObject({ name: 'MemoryLimitError', message: expect.stringContaining('256 MiB (SANDBOX_MEMORY_MB)') });
  });

  it('refuses a bundle whose content no longer matches its hash', async () => {
    const code = 'module.exports = { name: "t", version: "1", async run() { this.$emit("genuine"); } };';
    expect((await run('u_c', code)).emits[0].event).toBe('genuine');
    // Tamper with the shared cache: another account's sandbox loads it (through its own hard link) and refuses it.
    const dir = join(cache, 'npm', 'bundles');
    for (const f of readdirSync(dir).filter((x) => x.endsWith('.cjs'))) writeFileSync(join(dir, f), 'module.exports = { name: "evil", version: "1", async run() { this.$emit("evil"); } };');
    const after = await run('u_d', code);
    expect([after.error, after.emits]).toEqual([expect.objectContaining({ name: 'IntegrityError' }), []]);
  });

  it('loads npm packages from the account\'s own read-only copy, and refuses a set changed after its install', async () => {
    const code = 'const isNumber = require("is-number@7.0.0"); module.exports = { name: "n", version: "1", async run() { let write; try { const fs = require("fs"); fs.writeFileSync("/code/deps/" + fs.readdirSync("/code/deps")[0] + "/node_modules/is-number/index.js", "x"); write = "written"; } catch (e) { write = e.code; } this.$emit({ five: isNumber(5), write }); } };';
    const ok = await run('u_e', code);
    expect([ok.error, ok.emits[0]?.event]).toEqual([undefined, { five: true, write: expect.stringMatching(/EROFS|ERR_ACCESS_DENIED|EACCES/) }]);
    const installed = readdirSync(join(cache, 'npm')).find((d) => /^[0-9a-f]{32}$/.test(d))!;
    writeFileSync(join(cache, 'npm', installed, 'node_modules', 'is-number', 'index.js'), 'module.exports = () => "tampered";');
    const refused = await run('u_f', code);
    expect(refused.error).toMatchObject({ name: 'IntegrityError', message: expect.stringContaining('does not match the digest') });
  });
});
