import { EntityManager, raw } from '@mikro-orm/postgresql';
import { AutoSubscription, Source, Subscription, Workflow } from '@app/db';

/**
 * Marks a source or workflow deleted (its revision bumped) and removes its subscriptions, as emitter and as
 * listener, and its auto-subscriptions, in one transaction with the row locked from the first statement
 * (SubscriptionsService.create locks it too): a subscription made meanwhile finds it deleted, and of two deletes
 * at once the second finds nothing. Returns false when it was not there (deleted already). `guard`, run in the
 * transaction with the row marked (and locked), may refuse the delete by throwing: nothing is deleted then.
 */
export function softDeleteWithSubscriptions(
  em: EntityManager,
  entity: typeof Source | typeof Workflow,
  id: string,
  guard?: (tx: EntityManager) => Promise<void>,
): Promise<boolean> {
  return em.fork().transactional(async (tx) => {
    const marked = await tx.nativeUpdate<Source | Workflow>(entity, { id, deletedAt: null }, { deletedAt: Math.floor(Date.now() / 1000), rev: raw('rev + 1') });
    if (!marked) return false;
    if (guard) await guard(tx);
    await tx.nativeDelete(Subscription, { $or: [{ emitterId: id }, { listenerId: id }] });
    await tx.nativeDelete(AutoSubscription, { listenerId: id });
    return true;
  });
}
