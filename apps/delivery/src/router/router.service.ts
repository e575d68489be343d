import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { JsMsg } from 'nats';
import { APP_CONFIG, AppConfig, Logger } from '@app/config';
import { decodeJson, DeliveryMessage, EmittedEvent, encodeJson, InvocationMessage, partitionOf, ROUTER_DURABLE } from '@app/contracts';
import { ensureDurable, NatsService } from '@app/nats';
import { BatchConsumer } from '../common/durable-consumer';
import { DeliveryMetrics } from '../common/metrics';
import { LOGGER } from '../common/tokens';
import { SubscriptionCache } from './subscription-cache';
import { WebhookSenderService } from '../webhooks-out/webhook-sender.service';
import { IndexerService } from '../indexer/indexer.service';
import { ChainBudget } from './chain-budget';

/** The invocation a listener source gets for an event: `sub.<emitterId>.<eventId>` (event ids are unique per emitter). */
export const subscriptionInvocationId = (event: Pick<EmittedEvent, 'emitterId' | 'id'>): string => `sub.${event.emitterId}.${event.id}`;

/** How long a graceful stop waits for direct deliveries in flight before handing their emits back. */
const STOP_WAIT_MS = 5_000;

/**
 * Consumes EMITS once for everything the delivery app does with an event:
 * indexes it (IndexerService), then routes it to the listeners of matching subscriptions: an
 * invocation per listener source, and per webhook either a direct POST by this
 * process's sender (the webhook is healthy: no DELIVERIES hop) or a
 * `DeliveryMessage` on DELIVERIES (the durable queue the sender also consumes).
 * The emit is acked only once every listener has it: the invocation stored, the
 * POST answered 2xx or its retry durably queued, or the delivery stored on
 * DELIVERIES (Nats-Msg-Id `<subscriptionId>:<emitterId>:<eventId>` makes a
 * redelivered emit publish nothing twice). A replica that dies before the ack
 * leaves the emit to be routed again: a webhook may get an event twice
 * (`webhook-id` tells), never zero times.
 */
@Injectable()
export class RouterService implements OnApplicationBootstrap, OnApplicationShutdown {
  private consumer?: BatchConsumer;
  /** Emits whose routing waits for direct deliveries: kept alive, acked when they settle. */
  private readonly held = new Set<JsMsg>();
  private keepAlive?: NodeJS.Timeout;
  private readonly chains: ChainBudget;

  constructor(
    private readonly nats: NatsService,
    private readonly cache: SubscriptionCache,
    private readonly sender: WebhookSenderService,
    private readonly indexer: IndexerService,
    private readonly metrics: DeliveryMetrics,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.chains = new ChainBudget(config.subscriptionChainMaxRuns);
    // The emits of a batch still being routed that already wait for direct deliveries count twice until it is routed.
    metrics.watchRouter(() => (this.consumer?.pending ?? 0) + this.held.size);
  }

  async onApplicationBootstrap(): Promise<void> {
    const names = this.nats.names;
    await ensureDurable(this.nats.jsm, names.emitsStream, { durable_name: ROUTER_DURABLE, filter_subject: names.allEmits, max_ack_pending: 20_000, ack_wait: this.config.deliveryAckWaitMs * 1_000_000 });
    this.consumer = new BatchConsumer(this.nats.js, names.emitsStream, ROUTER_DURABLE, (batch) => this.route(batch), { maxBatch: 500, lingerMs: 2 }, this.logger, this.config.deliveryAckWaitMs);
    this.keepAlive = setInterval(() => this.held.forEach((m) => m.working()), Math.max(500, this.config.deliveryAckWaitMs / 3));
    await this.consumer.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.consumer?.stop();
    const deadline = Date.now() + STOP_WAIT_MS;
    while (this.held.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    clearInterval(this.keepAlive);
    for (const m of this.held) m.nak();
  }

  /**
   * Indexes the batch (committed before anything is routed: a listener never
   * gets an event that event summaries do not have), then publishes what must
   * be stored before the batch is done (invocations, queued deliveries); direct
   * deliveries go on in the background and ack their emit when they settle, so
   * a slow POST never holds up the next batch. A failed index naks the batch.
   */
  private async route(batch: JsMsg[]): Promise<void> {
    const events: { m: JsMsg; event: EmittedEvent }[] = [];
    for (const m of batch) {
      try {
        events.push({ m, event: decodeJson<EmittedEvent>(m.data) });
      } catch {
        this.logger.warn({ subject: m.subject, seq: m.seq }, 'dropping an emit that is not JSON');
        m.term(); // not JSON
      }
    }
    const unindexable = await this.indexer.index(events.map((e) => e.event));
    await this.cache.settled();
    await Promise.all(events.map(async ({ m, event }) => {
      if (unindexable.has(event)) return m.term(); // malformed event id
      const direct: Promise<void>[] = [];
      try {
        await Promise.all(this.cache.match(event).map((t) => this.publish(event, t.subscriptionId, t.listenerId, m.info.redeliveryCount, direct)));
      } catch (e) {
        return this.retry(m, event, e as Error);
      }
      if (!direct.length) return m.ack();
      this.held.add(m);
      void Promise.all(direct).then(
        () => {
          this.held.delete(m);
          m.ack();
        },
        (e: Error) => {
          this.held.delete(m);
          this.retry(m, event, e);
        },
      );
    }));
  }

  private retry(m: JsMsg, event: EmittedEvent, e: Error): void {
    this.logger.warn({ err: e.message, event_id: event.id }, 'routing failed; retrying');
    m.nak(1000);
  }

  /** Routes to one listener; a direct webhook delivery adds its settlement to `direct` instead of being awaited. */
  private async publish(event: EmittedEvent, subscriptionId: string, listenerId: string, deliveryCount: number, direct: Promise<void>[]): Promise<void> {
    const names = this.nats.names;
    // Event ids are unique per emitter only, and a glob subscription covers many emitters.
    const msgID = `${subscriptionId}:${event.emitterId}:${event.id}`;
    if (listenerId.startsWith('wh_')) {
      const msg: DeliveryMessage = { webhookId: listenerId, subscriptionId, event };
      const queue = async () => {
        await this.nats.streams.publish(names.delivery(listenerId), encodeJson(msg), msgID);
        this.metrics.webhookRoutes.inc({ path: 'queue' });
      };
      this.metrics.eventsRouted.inc({ listener_kind: 'webhook' });
      const offered = this.sender.offer(msg, deliveryCount);
      if (!offered) return queue();
      direct.push(offered.then((outcome) => (outcome === 'handoff' ? queue() : void this.metrics.webhookRoutes.inc({ path: 'direct' }))));
    } else if (listenerId.startsWith('dc_') || listenerId.startsWith('p_')) {
      // Events of runners that predate chains start their own.
      const root = event.chain?.root ?? `${event.emitterId}:${event.id}`;
      const depth = (event.chain?.depth ?? 0) + 1;
      // One past the bound still goes, once per listener and chain: its listener records the refusal as an $errors
      // event; that event goes no further.
      const pastDepth = depth > this.config.subscriptionMaxDepth;
      if (depth > this.config.subscriptionMaxDepth + 1) return void this.metrics.chainStopped.inc({ reason: 'depth' });
      // Runs its own emits start do not count: they are as many as its emits times its subscriptions.
      const verdict = depth >= 2 ? this.chains.take(root, listenerId, pastDepth) : 'run';
      if (verdict === 'drop') return void this.metrics.chainStopped.inc({ reason: pastDepth ? 'depth' : 'runs' });
      const inv: InvocationMessage = {
        // Derived from the event, not random: routed again (a redelivered emit), it is the same invocation,
        // which the listener's actor runs once and usage counts once.
        invocationId: subscriptionInvocationId(event),
        sourceId: listenerId,
        kind: 'subscription',
        event: event.event,
        createdAtMs: Date.now(),
        origin: { emitterId: event.emitterId, eventId: event.id, name: event.name ?? '' },
        chain: { root, depth, ...(verdict === 'refuse' && !pastDepth ? { overRuns: true } : {}) },
      };
      await this.nats.streams.publish(names.invocation(partitionOf(listenerId, this.config.partitions), listenerId), encodeJson(inv), msgID);
      this.metrics.eventsRouted.inc({ listener_kind: listenerId.startsWith('p_') ? 'workflow' : 'source' });
    }
  }
}
