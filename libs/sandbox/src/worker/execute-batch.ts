import type { ExecuteResult, HttpResponsePayload } from '../types';
import type { WorkerExecuteBatchTask } from '../worker-protocol';
import { execute } from './execute';

/**
 * Runs a batch of one source's invocations one after the other, exactly as
 * separate tasks would run them: each with its own deadline, logs, emits and
 * error; each sees the `$.service.db` as the previous one left it; `respond()`
 * of item `i` reaches the task's port at once as `{ i, r }`.
 */
export async function executeBatch(task: WorkerExecuteBatchTask): Promise<ExecuteResult[]> {
  const { items, port, ...shared } = task;
  const results: ExecuteResult[] = [];
  let db = task.db ?? {};
  try {
    for (let i = 0; i < items.length; i++) {
      const itemPort = port ? { postMessage: (r: HttpResponsePayload) => port.postMessage({ i, r }), close: () => undefined } : undefined;
      const result = await execute({ ...shared, kind: 'execute', method: 'run', invocationId: items[i].invocationId, event: items[i].event, db }, itemPort);
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
  } finally {
    port?.close();
  }
  return results;
}
