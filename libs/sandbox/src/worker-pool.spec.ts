import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultFetchText } from './bundler';
import { ComponentPreparer } from './preparer';
import { WorkerPool } from './worker-pool';
import type { BundleRef } from './worker-protocol';

const RESPONDS = `module.exports = { name: 'responds', version: '1', props: { http: { type: '$.interface.http', customResponse: true } },
  run(event) { this.http.respond({ status: 200, body: String(event.n) }); return { nested: JSON.parse('['.repeat(event.depth) + ']'.repeat(event.depth)) }; } };`;
const LOOP = `module.exports = { name: 'loop', version: '1', props: {}, async additionalProps() { for (;;) {} }, run() {} };`;

type PoolOptions = Pick<ConstructorParameters<typeof WorkerPool>[0], 'heapMb' | 'vmTimeout' | 'concurrentTasksPerWorker'>;

/**
 * For the enclosing describe: `code` prepared as the sandbox runs it, and a pool of two threads started on
 * use (`idleTimeoutMs`, as the sandbox host does), closed after the suite.
 */
function poolRunning(code: string, options: PoolOptions): { pool: WorkerPool; bundle: BundleRef } {
  const ctx = {} as { pool: WorkerPool; bundle: BundleRef };
  beforeAll(async () => {
    ctx.bundle = (await new ComponentPreparer({ npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-')), installTimeoutMs: 10_000 }).prepare({ code, fetchText: defaultFetchText() })).ref;
    ctx.pool = new WorkerPool({ threads: 2, idleTimeoutMs: 60_000, ...options });
  });
  afterAll(() => ctx.pool.close(100));
  return ctx;
}

/**
 * The pool of an account's sandbox starts its workers on use: a task queued behind tasks whose workers were stopped at their deadline still runs.
 */
describe('WorkerPool started on use', () => {
  const ctx = poolRunning(LOOP, { heapMb: 48, vmTimeout: 'never', concurrentTasksPerWorker: 1 });

  it('runs a task queued behind endless loops once their workers are stopped', async () => {
    const run = () => ctx.pool.run({ kind: 'additionalProps', bundle: ctx.bundle, configuredProps: {}, timeoutMs: 300, maxProps: 10, maxBytes: 1024 }, 300);
    // Two loops take both threads; the third waits in the queue and must still reach its own deadline.
    const outcomes = await Promise.all([run(), run(), run()]);
    expect(outcomes).toEqual([1, 2, 3].map(() => ({ failed: { name: 'TimeoutError', message: 'additionalProps timed out after 300 ms (its worker was stopped)' } })));
  }, 20_000);
});

/**
 * A task its caller cancels (`signal`: an api request whose client went away) stops at once: running, its worker is
 * terminated (the next task gets a fresh one); waiting for a worker, it never starts.
 */
describe('WorkerPool: cancelled tasks', () => {
  const ctx = poolRunning(LOOP, { heapMb: 48, vmTimeout: 'never', concurrentTasksPerWorker: 1 });

  it('stops running ones and drops waiting ones at once, long before their deadline', async () => {
    const ac = new AbortController();
    const run = () => ctx.pool.run({ kind: 'additionalProps', bundle: ctx.bundle, configuredProps: {}, timeoutMs: 60_000, maxProps: 10, maxBytes: 1024 }, 60_000, undefined, ac.signal);
    // Two loops take both threads; the third waits in the queue.
    const outcomes = Promise.all([run(), run(), run()]);
    await new Promise((r) => setTimeout(r, 1000));
    expect(ctx.pool.stats().queueSize).toBe(1);
    const started = Date.now();
    ac.abort();
    expect(await outcomes).toEqual([1, 2, 3].map(() => ({ failed: { name: 'CancelledError', message: 'the task was cancelled by its caller' } })));
    expect(Date.now() - started).toBeLessThan(1000);
    expect(ctx.pool.stats().queueSize).toBe(0);
    // An aborted signal never starts a task.
    expect(await run()).toEqual({ failed: { name: 'CancelledError', message: 'the task was cancelled by its caller' } });
  }, 20_000);
});

/**
 * `respond()` goes to the pool on a port of its own, beside the task's result: a run that answers and
 * returns at once still has its answer delivered before `run()` resolves, whichever message arrives first.
 * (The result carries the answer too, but not when it fails to be sent back: a result nested too deeply
 * for the channel then lost the answer the client was waiting for.)
 */
describe('WorkerPool: respond() beside the result', () => {
  const ctx = poolRunning(RESPONDS, { heapMb: 64, vmTimeout: 'always', concurrentTasksPerWorker: 4 });

  it('delivers every answer before its run resolves, also when the result is large', async () => {
    const lost: number[] = [];
    await Promise.all(
      Array.from({ length: 200 }, async (_, n) => {
        const answers: unknown[] = [];
        const task = { kind: 'execute' as const, sourceId: 'dc_t', invocationId: `inv_${n}`, method: 'run' as const, props: {}, db: {}, event: { n, depth: n % 2 ? 2000 : 1 }, timeoutMs: 5000, bundle: ctx.bundle, limits: { dbMaxBytes: 1 << 20, eventMaxBytes: 1 << 20, emitsPerInvocation: 10 } };
        await ctx.pool.run(task, 5000, (r) => answers.push(r));
        if (answers.length !== 1) lost.push(n);
      }),
    );
    expect(lost).toEqual([]);
  }, 60_000);
});
