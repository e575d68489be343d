import { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '@app/contracts';
import { AutoSubscription, Subscription } from '@app/db';
import { announceRoutes, NatsService } from '@app/nats';
import { assertRoomForMore, lockAccount } from '../common/account-quota';

/**
 * Subscribes the owner's auto-subscription listeners to a new source or workflow, each subscription made by its
 * auto-subscription's maker (so a route between two orgs routes while the maker belongs to both). Run it inside the
 * transaction that inserts the emitter: the subscriptions it makes count in SUBSCRIPTIONS_MAX_PER_ACCOUNT, under the
 * account's lock, and when they would pass it the emitter is refused (403 quota_exceeded) with them — else one
 * auto-subscription per new source multiplied the quota by the account's sources and workflows. True when it made
 * some: announce them with `announceAutoSubscribed` once the transaction has committed.
 */
export async function insertAutoSubscriptions(tx: EntityManager, emitter: { id: string; ownerId: string }, kind: 'source' | 'workflow', limit: number): Promise<boolean> {
  // Locked before the auto-subscriptions are read, so one made meanwhile is either seen here or counts this emitter's.
  if (limit) await lockAccount(tx, 'subscriptions', emitter.ownerId);
  const autos = (await tx.find(AutoSubscription, { ownerId: emitter.ownerId })).filter((a) => a.listenerId !== emitter.id);
  if (!autos.length) return false;
  await assertRoomForMore(tx, 'subscriptions', emitter.ownerId, limit, autos.length, `subscriptions this ${kind} would get from the account's auto-subscriptions`);
  for (const a of autos) {
    tx.persist(Object.assign(new Subscription(), { id: newId('subscription'), ownerId: emitter.ownerId, emitterId: emitter.id, listenerId: a.listenerId, eventName: a.eventName, createdBy: a.createdBy }));
  }
  await tx.flush();
  return true;
}

/**
 * The early check of `insertAutoSubscriptions`, before a create does costly work (saving code, deploying a trigger
 * source): refused when the subscriptions the account's auto-subscriptions would give `emitters` new emitters pass the
 * quota. Counted again, under the lock, as they are inserted.
 */
export async function assertRoomForAutoSubscriptions(em: EntityManager, ownerId: string, kind: 'source' | 'workflow', limit: number, emitters = 1): Promise<void> {
  if (!limit) return;
  const autos = await em.fork().count(AutoSubscription, { ownerId });
  await assertRoomForMore(em.fork(), 'subscriptions', ownerId, limit, autos * emitters, `subscriptions this ${kind} would get from the account's auto-subscriptions`);
}

/** Tells the delivery apps of the subscriptions `insertAutoSubscriptions` made, once they are committed. */
export async function announceAutoSubscribed(nats: NatsService, emitter: { id: string; ownerId: string }): Promise<void> {
  await announceRoutes(nats, 'subscriptions', { emitters: [{ emitter_id: emitter.id, owner_id: emitter.ownerId }] });
}
