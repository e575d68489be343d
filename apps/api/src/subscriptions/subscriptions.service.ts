import { Injectable } from '@nestjs/common';
import { EntityManager, UniqueConstraintViolationException } from '@mikro-orm/postgresql';
import { BadRequestError, newId, NotFoundError } from '@app/contracts';
import { AutoSubscription, Subscription } from '@app/db';
import { NatsService } from '@app/nats';
import { AuthContext, canAccess, namespaceOf } from '../auth/auth.context';
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
 * given by `org_id`, else the listener's owner; a glob covers that owner's emitters.
 * The caller is recorded: a route between two orgs routes only while they belong to both.
 */
@Injectable()
export class SubscriptionsService {
  constructor(private readonly em: EntityManager, private readonly nats: NatsService) {}

  async create(auth: AuthContext, orgId: unknown, emitterId: string, listenerId: string, eventName: string): Promise<SubscriptionDto> {
    const em = this.em.fork();
    await resolveEmitter(em, auth, emitterId);
    // Checked after both ids resolved: a glob as listener is "an id with another prefix", not a loop.
    const listener = await resolveListener(em, auth, listenerId);
    if (emitterId === listenerId) throw new BadRequestError('a source cannot subscribe to itself', { emitter_id: emitterId });
    const ownerId = orgId ? namespaceOf(auth, orgId) : listener.ownerId;
    const key = { ownerId, emitterId, listenerId, eventName };
    const existing = await em.findOne(Subscription, key);
    if (existing) {
      // Made again by someone else (the one who made it may have left an org it bridges): it routes for the caller now.
      if (existing.createdBy !== auth.userId) {
        existing.createdBy = auth.userId;
        await em.flush();
        this.changed();
      }
      return toDto(existing);
    }
    const sub = Object.assign(new Subscription(), { id: newId('subscription'), ...key, createdBy: auth.userId });
    try {
      await em.persist(sub).flush();
    } catch (e) {
      if (!(e instanceof UniqueConstraintViolationException)) throw e;
      return toDto((await this.em.fork().findOne(Subscription, key))!);
    }
    this.changed();
    return toDto(sub);
  }

  /** Removes the caller's subscriptions matching all three parameters; 404 when there is none. */
  async delete(auth: AuthContext, emitterId: string, listenerId: string, eventName: string): Promise<void> {
    const em = this.em.fork();
    const subs = (await em.find(Subscription, { emitterId, listenerId, eventName })).filter((s) => canAccess(auth, s.ownerId));
    if (!subs.length) throw new NotFoundError('subscription not found', { emitter_id: emitterId, listener_id: listenerId, event_name: eventName });
    await em.nativeDelete(Subscription, { id: { $in: subs.map((s) => s.id) } });
    this.changed();
  }

  async list(ownerId: string): Promise<SubscriptionDto[]> {
    const subs = await this.em.fork().find(Subscription, { ownerId }, { orderBy: { createdAtMs: 'asc', id: 'asc' } });
    return subs.map(toDto);
  }

  /** Sources created after this call in the owner's namespace get a subscription for `listener_id` (the sources api inserts them). */
  async createAuto(auth: AuthContext, orgId: unknown, listenerId: string, eventName: string): Promise<AutoSubscriptionDto> {
    const em = this.em.fork();
    const listener = await resolveListener(em, auth, listenerId);
    const ownerId = orgId ? namespaceOf(auth, orgId) : listener.ownerId;
    const key = { ownerId, listenerId, eventName };
    let auto = await em.findOne(AutoSubscription, key);
    if (!auto) {
      auto = Object.assign(new AutoSubscription(), { id: newId('autoSubscription'), ...key });
      try {
        await em.persist(auto).flush();
      } catch (e) {
        if (!(e instanceof UniqueConstraintViolationException)) throw e;
        auto = (await this.em.fork().findOne(AutoSubscription, key))!;
      }
    }
    return { id: auto.id, event_name: auto.eventName, listener_id: auto.listenerId };
  }

  private changed(): void {
    this.nats.nc.publish(this.nats.names.changed('subscriptions'));
  }
}
