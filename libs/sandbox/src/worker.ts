/**
 * Piscina worker entry: the component runtime (worker/runtime.ts) on a worker
 * thread, one task at a time per worker. Sandbox processes that run code on their
 * own thread (SANDBOX_RUN_IN=process) start the same runtime there instead.
 */
import { workerData } from 'node:worker_threads';
import type { WorkerData } from './worker-protocol';
import { startRuntime } from './worker/runtime';

export default startRuntime(workerData as WorkerData | undefined);
