import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxPool } from './pool';
import { task } from './test-support/components';

const ok = `module.exports = { name: 'ok', version: '1', run(e) { this.$emit(e) } }`;

describe.each([
  ['with vm timeout', true],
  ['without vm timeout (worker terminated at the deadline)', false],
  ['with adaptive vm timeout', 'adaptive'],
] as const)('SandboxPool limits %s', (_label, vmTimeout) => {
  let pool: SandboxPool;
  beforeAll(() => {
    pool = new SandboxPool({ threads: 2, heapMb: 48, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-')), vmTimeout });
  });
  afterAll(() => pool.close());

  it('stops a synchronous endless loop and keeps serving, other tasks unaffected', async () => {
    const loop = pool.execute(task(`module.exports = { name: 'loop', version: '1', run() { while (true) {} } }`, { timeoutMs: 300 }));
    const others = await Promise.all(Array.from({ length: 5 }, (_, i) => pool.execute(task(ok, { event: { i } }))));
    expect(others.map((r) => r.emits[0].event)).toEqual([0, 1, 2, 3, 4].map((i) => ({ i })));
    const r = await loop;
    expect(r.error).toMatchObject({ name: 'TimeoutError', message: expect.stringContaining('timed out after 300 ms') });
    const next = await pool.execute(task(ok, { event: { after: true } }));
    expect(next.emits[0].event).toEqual({ after: true });
  });

  it('stops an endless loop after an await (the worker is terminated and replaced)', async () => {
    const r = await pool.execute(task(`module.exports = { name: 'loop2', version: '1', async run() { await null; await new Promise((r) => setTimeout(r, 5)); for (;;) {} } }`, { timeoutMs: 300 }));
    expect(r.error?.name).toBe('TimeoutError');
    const next = await pool.execute(task(ok, { event: { after: 2 } }));
    expect(next.emits[0].event).toEqual({ after: 2 });
  });

  it('times out a run that never settles', async () => {
    const r = await pool.execute(task(`module.exports = { name: 'hang', version: '1', async run() { this.$emit(1); await new Promise(() => {}) } }`, { timeoutMs: 200 }));
    expect(r.error).toMatchObject({ name: 'TimeoutError' });
  });

  it('stops an endless loop at load time', async () => {
    const r = await pool.execute(task(`while (true) {}; module.exports = {}`, { timeoutMs: 300 }));
    expect(r.error?.name).toBe('TimeoutError');
    const d = await pool.describe(`for (;;) {}`, { timeoutMs: 500 });
    expect(d.error?.name).toBe('TimeoutError');
  });
});

describe('SandboxPool adaptive vm timeout', () => {
  let pool: SandboxPool;
  beforeAll(() => {
    pool = new SandboxPool({ threads: 1, heapMb: 48, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-')), vmTimeout: 'adaptive' });
  });
  afterAll(() => pool.close());

  it('stops the first hang by terminating the worker, later hangs of the same code with vm (the worker survives)', async () => {
    const loop = `module.exports = { name: 'loop', version: '1', run(e) { if (e.spin) for (;;) {} this.$emit(e) } }`;
    const first = await pool.execute(task(loop, { event: { spin: true }, timeoutMs: 200 }));
    expect(first.error?.message).toContain('its worker was stopped');
    const fine = await pool.execute(task(loop, { event: { spin: false } }));
    expect(fine.emits).toEqual([{ event: { spin: false }, meta: {} }]);
    const second = await pool.execute(task(loop, { event: { spin: true }, timeoutMs: 200 }));
    expect(second.error).toEqual(expect.objectContaining({ name: 'TimeoutError', message: 'run timed out after 200 ms' }));
  });
});

describe('SandboxPool heap cap', () => {
  let pool: SandboxPool;
  beforeAll(() => {
    pool = new SandboxPool({ threads: 1, heapMb: 48, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-')) });
  });
  afterAll(() => pool.close());

  it('turns an allocation bomb into a clear error and the pool survives', async () => {
    const bomb = `module.exports = { name: 'bomb', version: '1', run() { const a = []; for (;;) a.push(new Array(100000).fill({ x: Math.random() })) } }`;
    const r = await pool.execute(task(bomb, { timeoutMs: 30_000 }));
    expect(r.error).toMatchObject({ name: 'MemoryLimitError', message: expect.stringContaining('48 MB') });
    const next = await pool.execute(task(ok, { event: { alive: true } }));
    expect(next.emits[0].event).toEqual({ alive: true });
  });

  it('counts the timeout from when a worker starts the task, not while it waits in the queue', async () => {
    const slow = pool.execute(task(`module.exports = { name: 'slow', version: '1', async run() { await new Promise((r) => setTimeout(r, 1500)); this.$emit('slow') } }`, { timeoutMs: 5000 }));
    const queued = pool.execute(task(ok, { event: { queued: true }, timeoutMs: 100 }));
    const [s, q] = await Promise.all([slow, queued]);
    expect(s.error).toBeUndefined();
    expect(q.error).toBeUndefined();
    expect(q.emits[0].event).toEqual({ queued: true });
  });

  it('unloads cached components under memory pressure instead of running out of memory', async () => {
    // 80 distinct components, each holding 2 MB at module level: far more than the 48 MB heap if all stayed cached.
    for (let i = 0; i < 80; i++) {
      const code = `const big = new Array(250000).fill(${i}); big[1] = 0.5; module.exports = { name: 'm${i}', version: '1', run() { this.$emit(big.length) } }`;
      const r = await pool.execute(task(code));
      expect(r.error).toBeUndefined();
    }
  });

  it('keeps output of stray async code out of the next invocation on the same worker', async () => {
    const stray = await pool.execute(task(`module.exports = { name: 'stray', version: '1', run() {
      setTimeout(() => { console.log('stray output'); this.$emit('late') }, 50);
    } }`));
    expect(stray.error).toBeUndefined();
    const next = await pool.execute(task(`module.exports = { name: 'next', version: '1', async run() {
      await new Promise((r) => setTimeout(r, 300));
      console.log('mine');
    } }`));
    expect(next.logs.map((l) => l.msg)).toEqual(['mine']);
    expect(next.emits).toEqual([]);
  });

  it('does not let a component end its worker with process.exit', async () => {
    const r = await pool.execute(task(`module.exports = { name: 'exit', version: '1', run() { process.exit(1) } }`));
    expect(r.error?.message).toContain('process.exit(1) is not allowed');
  });
});

describe('SandboxPool.close', () => {
  it('fails tasks in flight and later calls with PoolClosedError', async () => {
    const pool = new SandboxPool({ threads: 1, heapMb: 48, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-')) });
    const warm = await pool.execute(task(ok));
    expect(warm.error).toBeUndefined();
    const inflight = pool.execute(task(`module.exports = { name: 'w', version: '1', async run() { await new Promise((r) => setTimeout(r, 5000)) } }`));
    await new Promise((r) => setTimeout(r, 100));
    await pool.close();
    await pool.close();
    expect((await inflight).error?.name).toBe('PoolClosedError');
    expect((await pool.execute(task(ok))).error?.name).toBe('PoolClosedError');
    expect((await pool.describe(ok, { timeoutMs: 1000 })).error?.name).toBe('PoolClosedError');
  });
});
