import { Inject, Injectable } from '@nestjs/common';
import { EntityManager, UniqueConstraintViolationException } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { BadRequestError, clipped, newId, NotFoundError } from '@app/contracts';
import { AutoSubscription, Subscription } from '@app/db';
import { announceRoutes, NatsService } from '@app/nats';
import { AuthContext, canAccess, inNamedOrg, namespaceOf } from '../auth/auth.context';
import { assertRoomFor } from '../common/account-quota';
import { resolveEmitter, resolveListener } from './endpoints';

export interface SubscriptionDto {
  id: string;
  emitter_id: string;
  listener_id: string;
  event_name: string;
}

export interface AutoSubscriptionDto {
  id: string;
  event_name: string;
  listener_id: string;
}

const toDto = (s: Subscription): SubscriptionDto => ({ id: s.id, emitter_id: s.emitterId, listener_id: s.listenerId, event_name: s.eventName });

/**
 * Subscriptions route an emitter's channel to a listener. The owner is the org
 * given by `org_id` (which must own one of the ends), else the listener's owner; a glob covers that owner's emitters.
 * The caller is recorded: a route between two orgs routes only while they belong to both.
 */
@Injectable()
export class SubscriptionsService {
  constructor(private readonly em: EntityManager, private readonly nats: NatsService, @Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async create(auth: AuthContext, orgId: unknown, emitterId: string, listenerId: string, eventName: string): Promise<SubscriptionDto> {
    let key: Pick<Subscription, 'ownerId' | 'emitterId' | 'listenerId' | 'eventName'> | undefined;
    try {
      // In one transaction with the emitter and listener locked (FOR SHARE): a delete of either that runs meanwhile
      // waits for it and then removes the new subscription too, or has happened and this answers 404.
      const { sub, changed } = await this.em.fork().transactional(async (tx) => {
        const emitter = await resolveEmitter(tx, auth, emitterId, true);
        // Checked after both ids resolved: a glob as listener is "an id with another prefix", not a loop.
        const listener = await resolveListener(tx, auth, listenerId, true);
        if (emitterId === listenerId) throw new BadRequestError(`a ${emitterId.startsWith('p_') ? 'workflow' : 'source'} cannot subscribe to itself`, { emitter_id: emitterId });
        const ownerId = orgId ? namespaceOf(auth, orgId) : listener.ownerId;
        // The org's list, quota and members' deletes hold it: a route between ends of other accounts is not the org's.
        if (!emitter.glob && emitter.ownerId !== ownerId && listener.ownerId !== ownerId) {
          throw new NotFoundError(`org ${ownerId} owns neither emitter ${emitterId} nor listener ${listenerId}: a subscription made with org_id needs one of its ends in that org`, { org_id: ownerId, emitter_id: emitterId, listener_id: listenerId });
        }
        key = { ownerId, emitterId, listenerId, eventName };
        const existing = await tx.findOne(Subscription, key);
        if (existing) {
          // Made again by someone else (the one who made it may have left an org it bridges): it routes for the caller now.
          if (existing.createdBy === auth.userId) return { sub: existing, changed: false };
          existing.createdBy = auth.userId;
          return { sub: existing, changed: true };
        }
        await assertRoomFor(tx, 'subscriptions', key.ownerId, this.config.subscriptionsMaxPerAccount);
        const sub = Object.assign(new Subscription(), { id: newId('subscription'), ...key, createdBy: auth.userId });
        tx.persist(sub);
        return { sub, changed: true };
      });
      if (changed) await announceRoutes(this.nats, 'subscriptions', { emitters: [{ emitter_id: sub.emitterId, owner_id: sub.ownerId }] });
      return toDto(sub);
    } catch (e) {
      // The same subscription made at the same moment by another request: theirs is the answer.
      if (!(e instanceof UniqueConstraintViolationException) || !key) throw e;
      return toDto((await this.em.fork().findOne(Subscription, key))!);
    }
  }

  /**
   * Removes the caller's subscriptions matching all three parameters; 404 when there is none, or when a concurrent
   * delete removed them between the read and the delete (of deletes at once, only the one that removed them says so).
   */
  async delete(auth: AuthContext, emitterId: string, listenerId: string, eventName: string): Promise<void> {
    const em = this.em.fork();
    const notFound = () => new NotFoundError('subscription not found', { emitter_id: clipped(emitterId), listener_id: clipped(listenerId), event_name: clipped(eventName) });
    const subs = (await em.find(Subscription, { emitterId, listenerId, eventName })).filter((s) => canAccess(auth, s.ownerId) && inNamedOrg(auth, s.ownerId));
    if (!subs.length) throw notFound();
    if (!(await em.nativeDelete(Subscription, { id: { $in: subs.map((s) => s.id) } }))) throw notFound();
    await announceRoutes(this.nats, 'subscriptions', { emitters: subs.map((s) => ({ emitter_id: s.emitterId, owner_id: s.ownerId })) });
  }

  async list(ownerId: string): Promise<SubscriptionDto[]> {
    const subs = await this.em.fork().find(Subscription, { ownerId }, { orderBy: { createdAtMs: 'asc', id: 'asc' } });
    return subs.map(toDto);
  }

  /**
   * Sources and workflows created after this call in the owner's namespace get a subscription for `listener_id` (the
   * sources and workflows apis insert them), made by the caller: between two orgs it routes while they belong to both.
   */
  async createAuto(auth: AuthContext, orgId: unknown, listenerId: string, eventName: string): Promise<AutoSubscriptionDto> {
    let key: Pick<AutoSubscription, 'ownerId' | 'listenerId' | 'eventName'> | undefined;
    let auto: AutoSubscription;
    try {
      // As `create`: the listener stays locked until the auto-subscription is stored.
      auto = await this.em.fork().transactional(async (tx) => {
        const listener = await resolveListener(tx, auth, listenerId, true);
        key = { ownerId: orgId ? namespaceOf(auth, orgId) : listener.ownerId, listenerId, eventName };
        const found = await tx.findOne(AutoSubscription, key);
        // As a subscription made again: the routes it gives new sources from now on are the caller's.
        if (found) return Object.assign(found, { createdBy: auth.userId });
        await assertRoomFor(tx, 'subscriptions', key.ownerId, this.config.subscriptionsMaxPerAccount);
        const made = Object.assign(new AutoSubscription(), { id: newId('autoSubscription'), ...key, createdBy: auth.userId });
        tx.persist(made);
        return made;
      });
    } catch (e) {
      if (!(e instanceof UniqueConstraintViolationException) || !key) throw e;
      auto = (await this.em.fork().findOne(AutoSubscription, key))!;
    }
    return { id: auto.id, event_name: auto.eventName, listener_id: auto.listenerId };
  }
}
