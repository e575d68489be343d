import { syncBuiltinESMExports } from 'node:module';

/**
 * Takes `worker_threads.Worker` away from component code. Node's permission
 * model lets a worker started with its own `execArgv` (e.g. `[]`) run without
 * it, so such a worker could spawn processes; the sandbox needs `--allow-worker`
 * for its own pool, which the host process creates before any component code
 * loads. Called once in every pool worker, before it loads a component; the ES
 * module view of `node:worker_threads` is synced, so `import { Worker }` gets
 * the refusal too.
 */
export function refuseNestedWorkers(): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const threads = require('node:worker_threads') as { Worker: unknown };
  threads.Worker = function Worker(): never {
    throw Object.assign(new Error('worker threads are not available to component code in the sandbox'), { code: 'ERR_ACCESS_DENIED' });
  };
  syncBuiltinESMExports();
}
