import { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '@app/contracts';
import { AutoSubscription, Subscription } from '@app/db';
import { announceRoutes, NatsService } from '@app/nats';

/**
 * Subscribes the owner's auto-subscription listeners to a new source or workflow, each subscription made by its
 * auto-subscription's maker (so a route between two orgs routes while the maker belongs to both).
 */
export async function autoSubscribe(em: EntityManager, nats: NatsService, emitter: { id: string; ownerId: string }): Promise<void> {
  const fork = em.fork();
  const autos = await fork.find(AutoSubscription, { ownerId: emitter.ownerId });
  if (!autos.length) return;
  for (const a of autos) {
    if (a.listenerId === emitter.id) continue;
    fork.persist(Object.assign(new Subscription(), { id: newId('subscription'), ownerId: emitter.ownerId, emitterId: emitter.id, listenerId: a.listenerId, eventName: a.eventName, createdBy: a.createdBy }));
  }
  await fork.flush();
  await announceRoutes(nats, 'subscriptions', { emitters: [{ emitter_id: emitter.id, owner_id: emitter.ownerId }] });
}
