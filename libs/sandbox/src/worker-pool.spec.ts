import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultFetchText } from './bundler';
import { ComponentPreparer } from './preparer';
import { WorkerPool } from './worker-pool';
import type { BundleRef } from './worker-protocol';

const LOOP = `module.exports = { name: 'loop', version: '1', props: {}, async additionalProps() { for (;;) {} }, run() {} };`;

/**
 * The pool of an account's sandbox starts its workers on use (`idleTimeoutMs`, as the sandbox host
 * does): a task queued behind tasks whose workers were stopped at their deadline still runs.
 */
describe('WorkerPool started on use', () => {
  let pool: WorkerPool;
  let bundle: BundleRef;
  beforeAll(async () => {
    const preparer = new ComponentPreparer({ npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-')), installTimeoutMs: 10_000 });
    bundle = (await preparer.prepare({ code: LOOP, fetchText: defaultFetchText() })).ref;
    pool = new WorkerPool({ threads: 2, heapMb: 48, vmTimeout: 'never', concurrentTasksPerWorker: 1, idleTimeoutMs: 60_000 });
  });
  afterAll(() => pool.close(100));

  it('runs a task queued behind endless loops once their workers are stopped', async () => {
    const run = () => pool.run({ kind: 'additionalProps', bundle, configuredProps: {}, timeoutMs: 300, maxProps: 10, maxBytes: 1024 }, 300);
    // Two loops take both threads; the third waits in the queue and must still reach its own deadline.
    const outcomes = await Promise.all([run(), run(), run()]);
    expect(outcomes).toEqual([1, 2, 3].map(() => ({ failed: { name: 'TimeoutError', message: 'additionalProps timed out after 300 ms (its worker was stopped)' } })));
  }, 20_000);
});
