import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { JsMsg } from 'nats';
import { APP_CONFIG, AppConfig, Logger } from '@app/config';
import { decodeJson, DeliveryMessage, EmittedEvent, encodeJson, InvocationMessage, partitionOf } from '@app/contracts';
import { NatsService } from '@app/nats';
import { BatchConsumer, ensureDurable } from '../common/durable-consumer';
import { DeliveryMetrics } from '../common/metrics';
import { LOGGER } from '../common/tokens';
import { SubscriptionCache } from './subscription-cache';

const DURABLE = 'router';

/** The invocation a listener source gets for an event: `sub.<emitterId>.<eventId>` (event ids are unique per emitter). */
export const subscriptionInvocationId = (event: Pick<EmittedEvent, 'emitterId' | 'id'>): string => `sub.${event.emitterId}.${event.id}`;

/**
 * Routes each emitted event to the listeners of matching subscriptions:
 * a `DeliveryMessage` on DELIVERIES per webhook, an invocation per source.
 * The emit is acked only after every publish is stored (Nats-Msg-Id
 * `<subscriptionId>:<emitterId>:<eventId>` makes a redelivered emit publish nothing twice).
 */
@Injectable()
export class RouterService implements OnApplicationBootstrap, OnApplicationShutdown {
  private consumer?: BatchConsumer;

  constructor(
    private readonly nats: NatsService,
    private readonly cache: SubscriptionCache,
    private readonly metrics: DeliveryMetrics,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const names = this.nats.names;
    await ensureDurable(this.nats.jsm, names.emitsStream, { durable_name: DURABLE, filter_subject: names.allEmits, max_ack_pending: 20_000, ack_wait: this.config.deliveryAckWaitMs * 1_000_000 });
    this.consumer = new BatchConsumer(this.nats.js, names.emitsStream, DURABLE, (batch) => this.route(batch), { maxBatch: 500, lingerMs: 2 }, this.logger, this.config.deliveryAckWaitMs);
    await this.consumer.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.consumer?.stop();
  }

  private async route(batch: JsMsg[]): Promise<void> {
    await this.cache.settled();
    await Promise.all(batch.map(async (m) => {
      let event: EmittedEvent;
      try {
        event = decodeJson<EmittedEvent>(m.data);
      } catch {
        m.term(); // not JSON
        return;
      }
      try {
        await Promise.all(this.cache.match(event).map((t) => this.publish(event, t.subscriptionId, t.listenerId)));
        m.ack();
      } catch (e) {
        this.logger.warn({ err: (e as Error).message, event_id: event.id }, 'routing failed; retrying');
        m.nak(1000);
      }
    }));
  }

  private async publish(event: EmittedEvent, subscriptionId: string, listenerId: string): Promise<void> {
    const names = this.nats.names;
    // Event ids are unique per emitter only, and a glob subscription covers many emitters.
    const msgID = `${subscriptionId}:${event.emitterId}:${event.id}`;
    if (listenerId.startsWith('wh_')) {
      const msg: DeliveryMessage = { webhookId: listenerId, subscriptionId, event };
      await this.nats.streams.publish(names.delivery(listenerId), encodeJson(msg), msgID);
      this.metrics.eventsRouted.inc({ listener_kind: 'webhook' });
    } else if (listenerId.startsWith('dc_')) {
      const inv: InvocationMessage = {
        // Derived from the event, not random: routed again (a redelivered emit), it is the same invocation,
        // which the listener's actor runs once and usage counts once.
        invocationId: subscriptionInvocationId(event),
        sourceId: listenerId,
        kind: 'subscription',
        event: event.event,
        createdAtMs: Date.now(),
        origin: { emitterId: event.emitterId, eventId: event.id, name: event.name ?? '' },
      };
      await this.nats.streams.publish(names.invocation(partitionOf(listenerId, this.config.partitions), listenerId), encodeJson(inv), msgID);
      this.metrics.eventsRouted.inc({ listener_kind: 'source' });
    }
  }
}
