import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxPool } from './pool';
import { task } from './test-support/components';
import type { ExecuteBatchTask, HttpResponsePayload } from './types';

function batch(code: string, events: unknown[], overrides: Partial<ExecuteBatchTask> = {}): ExecuteBatchTask {
  const { kind: _k, method: _m, invocationId: _i, event: _e, ...shared } = task(code);
  return { ...shared, kind: 'executeBatch', items: events.map((event, i) => ({ invocationId: `inv_${i}`, event })), ...overrides };
}

describe('SandboxPool.executeBatch', () => {
  let pool: SandboxPool;
  beforeAll(() => {
    pool = new SandboxPool({ threads: 1, heapMb: 64, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-')) });
  });
  afterAll(() => pool.close());

  it('runs the invocations in order, each seeing the db as the previous one left it', async () => {
    const code = `module.exports = { props: { db: '$.service.db' }, async run(event) {
      const seen = this.db.get('seen') ?? [];
      this.db.set('seen', [...seen, event.n]);
      console.log('run', event.n);
      this.$emit({ n: event.n, before: seen });
    } };`;
    const out = await pool.executeBatch(batch(code, [{ n: 1 }, { n: 2 }, { n: 3 }], { db: { seen: [0] } }));
    if ('failed' in out) throw new Error(out.failed.message);
    expect(out.results.map((r) => r.emits[0].event)).toEqual([
      { n: 1, before: [0] },
      { n: 2, before: [0, 1] },
      { n: 3, before: [0, 1, 2] },
    ]);
    expect(out.results.map((r) => r.dbWrites)).toEqual([{ seen: [0, 1] }, { seen: [0, 1, 2] }, { seen: [0, 1, 2, 3] }]);
    expect(out.results.map((r) => r.logs.map((l) => l.msg))).toEqual([['run 1'], ['run 2'], ['run 3']]);
  });

  it('fails only the invocation that throws or overruns its own timeout', async () => {
    const code = `module.exports = { async run(event) {
      if (event.throw) throw new Error('bad ' + event.n);
      if (event.hang) await new Promise(() => {});
      this.$emit(event.n);
    } };`;
    const out = await pool.executeBatch(batch(code, [{ n: 1 }, { n: 2, throw: true }, { n: 3, hang: true }, { n: 4 }], { timeoutMs: 300 }));
    if ('failed' in out) throw new Error(out.failed.message);
    expect(out.results.map((r) => r.error?.name ?? r.emits[0].event)).toEqual([1, 'Error', 'TimeoutError', 4]);
    expect(out.results[1].error?.message).toBe('bad 2');
  });

  it("answers each invocation's respond() as soon as it is called, with its own index", async () => {
    const code = `module.exports = { props: { http: { type: '$.interface.http', customResponse: true } }, async run(event) {
      this.http.respond({ status: 200 + event.n, body: 'r' + event.n });
      await new Promise((r) => setTimeout(r, 30));
    } };`;
    const seen: { i: number; r: HttpResponsePayload; batchDone: boolean }[] = [];
    let batchDone = false;
    const out = await pool.executeBatch(batch(code, [{ n: 0 }, { n: 1 }, { n: 2 }]), { onResponse: (i, r) => seen.push({ i, r, batchDone }) }).finally(() => (batchDone = true));
    expect('results' in out).toBe(true);
    expect(seen.map(({ i, r }) => [i, r.status, r.body])).toEqual([
      [0, 200, 'r0'],
      [1, 201, 'r1'],
      [2, 202, 'r2'],
    ]);
    // The first answer did not wait for the batch to end (each run goes on for 30 ms after responding).
    expect(seen[0].batchDone).toBe(false);
  });

  it('reports a batch whose code cannot be prepared as failed as a whole', async () => {
    const out = await pool.executeBatch(batch(`import x from "./missing.js"; export default { run() {} }`, [{}, {}]));
    expect('failed' in out && out.failed.message).toMatch(/missing/);
  });

  it("executeBatches runs several sources' batches as one task: each source in order on its own db, the sources side by side", async () => {
    const code = `module.exports = { props: { db: '$.service.db', http: { type: '$.interface.http', customResponse: true } }, async run(event) {
      const seen = this.db.get('seen') ?? [];
      this.db.set('seen', [...seen, event.n]);
      this.http.respond({ status: 200, body: this.db.get('name') + event.n });
      // The first source waits for the second one's first run: they run side by side, not one after the other.
      if (event.wait) await new Promise((r) => setTimeout(r, 100));
      this.$emit({ n: event.n, before: seen });
    } };`;
    const answers: [number, number, string | undefined][] = [];
    const out = await pool.executeBatches(
      [batch(code, [{ n: 1, wait: true }, { n: 2 }], { sourceId: 'dc_a', db: { name: 'a', seen: [] } }), batch(code, [{ n: 7 }], { sourceId: 'dc_b', db: { name: 'b' } })],
      { onResponse: (b, i, r) => answers.push([b, i, r.body as string]) },
    );
    if ('failed' in out) throw new Error(out.failed.message);
    expect(out.results.map((rs) => rs.map((r) => r.emits[0].event))).toEqual([
      [
        { n: 1, before: [] },
        { n: 2, before: [1] },
      ],
      [{ n: 7, before: [] }],
    ]);
    expect(answers).toEqual([
      [0, 0, 'a1'],
      [1, 0, 'b7'],
      [0, 1, 'a2'],
    ]);
  });
});
