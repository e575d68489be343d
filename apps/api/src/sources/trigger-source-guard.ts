import { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError } from '@app/contracts';

/** How many workflows a refused source delete names in `details.workflow_ids`. */
const NAMED_MAX = 20;

/**
 * A source a workflow of its owner names as its trigger (`trigger.source`, by id or managed) is not deleted: the
 * workflow would keep a trigger that never fires. Run in the delete's transaction after the source row is marked
 * (and so locked): a deploy naming the source locks it too (`lockTriggerSource`), so either its workflow is
 * committed first and found here, or it finds the source deleted and is refused.
 */
export async function assertNoWorkflowTriggeredBy(tx: EntityManager, source: { id: string; ownerId: string }): Promise<void> {
  const sql = `select id from workflows where owner_id = ? and deleted_at is null and trigger->>'source' = ? order by id limit ${NAMED_MAX}`;
  const ids = (await tx.execute<{ id: string }[]>(sql, [source.ownerId, source.id])).map((r) => r.id);
  if (!ids.length) return;
  const named = ids.length > 1 ? `workflows ${ids.join(', ')}` : `workflow ${ids[0]}`;
  const message = `source ${source.id} is the trigger of ${named}: change the workflow's trigger (PUT /v1/workflows/${ids[0]}, trigger.source) or delete the workflow first`;
  throw new ConflictError(message, { id: source.id, workflow_id: ids[0], workflow_ids: ids });
}

/**
 * In a workflow's create or deploy transaction: the source its stored trigger names (`trigger.source`), share-locked
 * until the transaction ends, or false when it is no longer there (deleted meanwhile) and the workflow must not be
 * stored. A trigger that names no source passes.
 */
export async function lockTriggerSource(tx: EntityManager, ownerId: string, trigger: Record<string, unknown>): Promise<boolean> {
  if (typeof trigger.source !== 'string') return true;
  const sql = `select id from sources where id = ? and owner_id = ? and deleted_at is null for share`;
  const rows = await tx.execute<{ id: string }[]>(sql, [trigger.source, ownerId]);
  return rows.length > 0;
}
