import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxPool } from '@app/sandbox';
import { task } from '../../../../libs/sandbox/src/test-support/components';
import { RunCombiner } from './run-combiner';

describe('RunCombiner', () => {
  let pool: SandboxPool;
  let tasks: number[];
  let combiner: RunCombiner;
  beforeAll(() => {
    pool = new SandboxPool({ threads: 1, heapMb: 64, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-')), vmTimeout: 'adaptive' });
    // Counts the sources of every task that reaches the pool.
    const counted = {
      execute: (...a: Parameters<SandboxPool['execute']>) => (tasks.push(1), pool.execute(...a)),
      executeBatch: (...a: Parameters<SandboxPool['executeBatch']>) => (tasks.push(1), pool.executeBatch(...a)),
      executeBatches: (...a: Parameters<SandboxPool['executeBatches']>) => (tasks.push(a[0].length), pool.executeBatches(...a)),
    };
    combiner = new RunCombiner(counted, 64);
  });
  beforeEach(() => (tasks = []));
  afterAll(() => pool.close());

  const code = `module.exports = { props: { db: '$.service.db', http: { type: '$.interface.http', customResponse: true } }, async run(event) {
    if (event.loop) for (;;) {}
    this.db.set('last', event.n);
    this.http.respond({ status: 200, body: String(event.n) });
    this.$emit({ n: event.n, name: this.db.get('name') });
  } };`;
  const run = (sourceId: string, n: number, extra: object = {}) => task(code, { sourceId, db: { name: sourceId }, event: { n, ...extra }, timeoutMs: 500 });

  it("runs different sources' runs asked for in one turn as one task, each with its own result and response", async () => {
    const answers: string[] = [];
    const [a, b] = await Promise.all([
      combiner.execute(run('dc_a', 1), { onResponse: (r) => answers.push(`a${r.body}`) }),
      combiner.executeBatch({ ...run('dc_b', 0), kind: 'executeBatch', items: [{ invocationId: 'b1', event: { n: 2 } }, { invocationId: 'b2', event: { n: 3 } }] }, { onResponse: (i, r) => answers.push(`b${i}:${r.body}`) }),
    ]);
    expect(tasks).toEqual([2]);
    expect(a.emits.map((e) => e.event)).toEqual([{ n: 1, name: 'dc_a' }]);
    expect(a.dbWrites).toEqual({ last: 1 });
    if ('failed' in b) throw new Error(b.failed.message);
    expect(b.results.map((r) => r.emits[0].event)).toEqual([
      { n: 2, name: 'dc_b' },
      { n: 3, name: 'dc_b' },
    ]);
    expect(answers.sort()).toEqual(['a1', 'b0:2', 'b1:3']);
  });

  it('leaves hooks and a run alone in its turn as they were', async () => {
    await combiner.execute({ ...run('dc_a', 1), method: 'deploy' }, {});
    await combiner.execute(run('dc_a', 2), {});
    expect(tasks).toEqual([1, 1]);
  });

  it('runs each source again on its own when their task fails as a whole, so that only the culprit fails', async () => {
    const [good, bad] = await Promise.all([combiner.execute(run('dc_good', 1), {}), combiner.execute(run('dc_bad', 2, { loop: true }), {})]);
    expect(tasks).toEqual([2, 1, 1]);
    expect(good.error).toBeUndefined();
    expect(good.emits.map((e) => e.event)).toEqual([{ n: 1, name: 'dc_good' }]);
    expect(bad.error?.name).toBe('TimeoutError');
  });
});
