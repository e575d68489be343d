import type { ExecuteResult, HttpResponsePayload } from '../types';
import type { WorkerBatchPart, WorkerExecuteBatchTask } from '../worker-protocol';
import { execute } from './execute';

/**
 * Runs a batch: each part's (one source's) invocations one after the other, exactly as separate tasks would run
 * them: each with its own deadline, logs, emits and error; each sees the `$.service.db` as the previous one of its
 * part left it; `respond()` of item `i` (numbered across the parts) reaches the task's port at once as `{ i, r }`.
 * The parts run side by side, as the tasks of different sources do: one source's awaits do not hold another's.
 */
export async function executeBatch(task: WorkerExecuteBatchTask): Promise<ExecuteResult[]> {
  const { parts, port, bundle } = task;
  let from = 0;
  const offsets = parts.map((p) => (from += p.items.length) - p.items.length);
  try {
    const results = await Promise.all(parts.map((part, n) => runPart(part, bundle, offsets[n], port)));
    return results.flat();
  } finally {
    port?.close();
  }
}

async function runPart(part: WorkerBatchPart, bundle: WorkerExecuteBatchTask['bundle'], offset: number, port: WorkerExecuteBatchTask['port']): Promise<ExecuteResult[]> {
  const { items, ...shared } = part;
  const results: ExecuteResult[] = [];
  let db = part.db ?? {};
  for (let i = 0; i < items.length; i++) {
    const index = offset + i;
    const itemPort = port ? { postMessage: (r: HttpResponsePayload) => port.postMessage({ i: index, r }), close: () => undefined } : undefined;
    const result = await execute({ ...shared, bundle, kind: 'execute', method: 'run', invocationId: items[i].invocationId, event: items[i].event, db }, itemPort);
    results.push(result);
    const writes = Object.entries(result.dbWrites);
    if (writes.length) {
      db = { ...db };
      for (const [k, v] of writes) {
        if (v === undefined) delete db[k];
        else db[k] = v;
      }
    }
  }
  return results;
}
