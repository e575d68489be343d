import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
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

  beforeAll(async () => {
    const listen = (s: Server) => new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    open = createServer((c) => c.end('hello from an allowed service'));
    closed = createServer((c) => c.end('must not be reached'));
    await listen(open);
    await listen(closed);
    cache = mkdtempSync(join(tmpdir(), 'ess-iso-'));
    const isolation = await setUpIsolation(
      isolationSettings(cache, { sandboxThreadsPerAccount: 1, sandboxMemoryMb: 256, sandboxIdleMs: 60_000, sandboxMaxProcesses: 8, sandboxEgressAllow: `127.0.0.1:${port(open)}` }),
    );
    expect(isolation.mode).toBe('namespaces');
    pool = new SandboxPool({ threads: 1, heapMb: 64, npmCacheDir: join(cache, 'npm'), isolation: isolation.options });
  });
  afterAll(async () => {
    await pool?.close();
    open?.close();
    closed?.close();
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

  it('ends only the account\'s sandbox when it is killed, and starts a new one', async () => {
    const killed = await run('u_a', 'module.exports = { name: "k", version: "1", async run() { process.kill(process.pid, "SIGKILL"); } };');
    expect(killed.error).toMatchObject({ name: 'SandboxCrashError', message: expect.stringContaining('killed (SIGKILL)') });
    expect((await run('u_a', dial(port(open)))).error).toBeUndefined();
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
