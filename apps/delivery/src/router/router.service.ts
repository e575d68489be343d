import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { JsMsg } from 'nats';
import { APP_CONFIG, AppConfig, Logger } from '@app/config';
import { DeliveryMessage, EmittedEvent, EMITS_ROUTED_HEADER, encodeJson, InvocationMessage, partitionOf, readEmits, ROUTER_DURABLE, TimeSlicer } from '@app/contracts';
import { ensureDurable, NatsService } from '@app/nats';
import { BatchConsumer } from '../common/durable-consumer';
import { DeliveryMetrics } from '../common/metrics';
import { LOGGER } from '../common/tokens';
import { RouteTarget, SubscriptionCache } from './subscription-cache';
import { WebhookSenderService } from '../webhooks-out/webhook-sender.service';
import { IndexerService } from '../indexer/indexer.service';
import { ChainBudget } from './chain-budget';
import { ListenerBacklog } from './listener-backlog';

/** How often, at most, the router logs that it did not start runs of one account's listeners (the count is a metric). */
const DROPPED_LOG_EVERY_MS = 60_000;

/**
 * The invocation a listener source or workflow gets for an event: `sub.<listenerId>.<emitterId>.<eventId>` (event
 * ids are unique per emitter). Per listener, since what a run publishes is deduplicated by ids built from its
 * invocation id (emits `<invocationId>:e<n>` in EMITS, usage `usage:<invocationId>`): listeners sharing one would
 * lose all but the first one's emits and usage.
 */
export const subscriptionInvocationId = (event: Pick<EmittedEvent, 'emitterId' | 'id'>, listenerId: string): string => `sub.${listenerId}.${event.emitterId}.${event.id}`;

/** One EMITS message and its events (one, or an `EmitBatch`'s). */
interface Emit {
  m: JsMsg;
  events: EmittedEvent[];
}

/** How long a graceful stop waits for direct deliveries in flight before handing their emits back. */
const STOP_WAIT_MS = 5_000;
/**
 * DELIVERIES publishes the router leaves to settle in the background at most (their emits are acked once stored);
 * past it a batch waits for its own. Awaited in the batch, one account's failing webhooks (60 of them, each event
 * published once per webhook) held every later batch for 100–470 ms, and every other account's events with it.
 */
const QUEUE_PUBLISHES_MAX = 10_000;
/**
 * DELIVERIES publishes one account's webhooks may have settling in the background (a quarter of QUEUE_PUBLISHES_MAX);
 * an emit that would route to a webhook of an account holding as many is handed back to EMITS for HAND_BACK_MS, not
 * routed, so the batch goes on to other accounts' events. Before, past QUEUE_PUBLISHES_MAX the batch awaited each
 * publish of one account's fan-out (an event to 200 webhooks, 2,000 events: 400,000 publishes), and every other
 * account's events behind it waited more than a minute.
 */
const QUEUE_PUBLISHES_PER_OWNER = QUEUE_PUBLISHES_MAX / 4;
/** How long an emit handed back for its webhooks' owner waits before it is routed again. */
const HAND_BACK_MS = 1_000;

/**
 * Consumes EMITS once for everything the delivery app does with an event. An
 * EMITS message is one emit: one event, or an `EmitBatch` holding the events of
 * several invocations. The router indexes every event (IndexerService), then
 * routes each to the listeners of matching subscriptions: an invocation per
 * listener source, and per webhook either a direct POST by this process's
 * sender (the webhook is healthy: no DELIVERIES hop) or a `DeliveryMessage` on
 * DELIVERIES (the durable queue the sender also consumes). A message is acked
 * only once every listener has every one of its events: the invocation stored,
 * the POST answered 2xx or its retry durably queued, or the delivery stored on
 * DELIVERIES (Nats-Msg-Id `<subscriptionId>:<emitterId>:<eventId>` makes a
 * redelivered message publish nothing twice). A replica that dies before the
 * ack, or a routing failure of any of its events, leaves the whole message to
 * be routed again: a webhook may get an event twice (`webhook-id` tells), never
 * zero times.
 */
@Injectable()
export class RouterService implements OnApplicationBootstrap, OnApplicationShutdown {
  private consumer?: BatchConsumer;
  /** Messages whose routing waits for direct deliveries or queued publishes in the background: kept alive, acked when they all settle. */
  private readonly held = new Set<JsMsg>();
  private keepAlive?: NodeJS.Timeout;
  private readonly chains: ChainBudget;
  private readonly listenerBacklog: ListenerBacklog;
  /** DELIVERIES publishes settling in the background (QUEUE_PUBLISHES_MAX). */
  private queuePublishes = 0;
  /** DELIVERIES publishes settling in the background per webhook owner (QUEUE_PUBLISHES_PER_OWNER). */
  private readonly queuedByOwner = new Map<string, number>();
  /** Times each EMITS message (by stream sequence) was handed back unrouted: those deliveries were no attempts. */
  private readonly handedBack = new Map<number, number>();
  /** Per account: when the router last logged runs of its listeners it did not start, and how many since. */
  private readonly dropped = new Map<string, { loggedAtMs: number; since: number }>();

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
    this.listenerBacklog = new ListenerBacklog(nats, config.ingestMaxPendingPerAccount, (e) => logger.warn({ err: e.message }, 'reading the invocations waiting for listeners failed'));
    // Messages of a batch still being routed that already wait for direct deliveries count twice until it is routed.
    metrics.watchRouter(() => (this.consumer?.pending ?? 0) + this.held.size);
  }

  async onApplicationBootstrap(): Promise<void> {
    const names = this.nats.names;
    await ensureDurable(this.nats.jsm, names.emitsStream, { durable_name: ROUTER_DURABLE, filter_subject: names.allEmits, max_ack_pending: 20_000, ack_wait: this.config.deliveryAckWaitMs * 1_000_000 });
    this.consumer = new BatchConsumer(this.nats.js, names.emitsStream, ROUTER_DURABLE, (batch) => this.route(batch), { maxBatch: 500, lingerMs: 2 }, this.logger, this.config.deliveryAckWaitMs);
    this.keepAlive = setInterval(() => this.held.forEach((m) => m.working()), Math.max(500, this.config.deliveryAckWaitMs / 3));
    this.listenerBacklog.start();
    await this.consumer.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.listenerBacklog.stop();
    await this.consumer?.stop();
    const deadline = Date.now() + STOP_WAIT_MS;
    while (this.held.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    clearInterval(this.keepAlive);
    for (const m of this.held) m.nak();
  }

  /**
   * Indexes the events of the batch's messages (committed before anything is
   * routed: a listener never gets an event that event summaries do not have),
   * then routes each message (`routeEmit`). A failed index naks the batch.
   */
  private async route(batch: JsMsg[]): Promise<void> {
    const emits: Emit[] = [];
    // Message by message, handing the event loop back between them: a batch may hold 64 MiB of one run's events.
    const slicer = new TimeSlicer();
    for (const m of batch) {
      if (slicer.due()) await slicer.handBack();
      // A range delete's copy of a message routed before: its events are indexed and delivered already.
      if (m.headers?.has(EMITS_ROUTED_HEADER)) {
        m.ack();
        continue;
      }
      const events = readEmits(m.data);
      if (events) emits.push({ m, events });
      else {
        this.logger.warn({ subject: m.subject, seq: m.seq }, 'dropping an emit that is not JSON');
        m.term(); // not JSON
      }
    }
    // A message whose webhooks' owner has its share of publishes settling from earlier batches goes back before it
    // is indexed: handed back again and again while a fan-out drains, it would be indexed again each time.
    await this.cache.settled();
    const routed: Emit[] = [];
    for (const e of emits) {
      if (this.overShare(e.events)) this.handBack(e.m);
      else routed.push(e);
    }
    const unindexable = await this.indexer.index(routed.flatMap((e) => e.events));
    await this.cache.settled();
    await Promise.all(routed.map((e) => this.routeEmit(e, unindexable)));
  }

  /**
   * Publishes what must be stored before the message is done (invocations,
   * queued deliveries) for each of its events; direct deliveries and queued
   * deliveries (up to QUEUE_PUBLISHES_MAX) go on in the background and ack the
   * message when they all settle, so neither holds up the next batch. An event
   * that cannot be indexed is dropped alone; a message with none that can, as a whole.
   */
  private async routeEmit({ m, events }: Emit, unindexable: Set<EmittedEvent>): Promise<void> {
    const routable = events.filter((event) => !unindexable.has(event));
    if (!routable.length) return m.term(); // malformed event ids
    if (routable.length < events.length) this.logger.warn({ subject: m.subject, seq: m.seq, skipped: events.length - routable.length }, 'skipping the events of a batch that cannot be indexed');
    // Checked again: the messages before it in this batch may have brought an owner to its share.
    if (this.overShare(routable)) return this.handBack(m);
    const routes = routable.map((event) => ({ event, targets: this.cache.match(event) }));
    // A message handed back before was not routed then: only its other redeliveries may have made attempts.
    const deliveryCount = m.info.redeliveryCount - (this.handedBack.get(m.seq) ?? 0);
    this.handedBack.delete(m.seq);
    const background: Promise<void>[] = [];
    try {
      await Promise.all(routes.flatMap(({ event, targets }) => targets.map((t) => this.publish(event, t, deliveryCount, background))));
    } catch (e) {
      void Promise.allSettled(background); // the message is routed again: their outcomes no longer matter, but must not go unhandled
      return this.retry(m, e as Error);
    }
    if (!background.length) return m.ack();
    this.held.add(m);
    void Promise.all(background).then(
      () => {
        this.held.delete(m);
        m.ack();
      },
      (e: Error) => {
        this.held.delete(m);
        this.retry(m, e);
      },
    );
  }

  /** A run of a listener not started: its account has INGEST_MAX_PENDING_PER_ACCOUNT invocations waiting already. */
  private notStarted(owner: string, listenerId: string, event: EmittedEvent): void {
    this.metrics.chainStopped.inc({ reason: 'backlog' });
    const now = Date.now();
    const seen = this.dropped.get(owner) ?? { loggedAtMs: 0, since: 0 };
    seen.since++;
    if (now - seen.loggedAtMs >= DROPPED_LOG_EVERY_MS) {
      this.logger.warn(
        { owner_id: owner, listener_id: listenerId, emitter_id: event.emitterId, event_id: event.id, not_started: seen.since, limit: this.config.ingestMaxPendingPerAccount },
        "events not given to an account's listeners: it has INGEST_MAX_PENDING_PER_ACCOUNT invocations waiting to run",
      );
      seen.loggedAtMs = now;
      seen.since = 0;
    }
    if (this.dropped.size >= 10_000 && !this.dropped.has(owner)) this.dropped.clear();
    this.dropped.set(owner, seen);
  }

  /** Whether the events route to a webhook whose owner has QUEUE_PUBLISHES_PER_OWNER publishes settling. */
  private overShare(events: EmittedEvent[]): boolean {
    if (!this.queuedByOwner.size) return false;
    return events.some((event) => this.cache.match(event).some((t) => t.listenerId.startsWith('wh_') && (this.queuedByOwner.get(t.listenerOwner) ?? 0) >= QUEUE_PUBLISHES_PER_OWNER));
  }

  /** The message goes back to EMITS unrouted for HAND_BACK_MS: a webhook owner it routes to has its share of publishes settling. */
  private handBack(m: JsMsg): void {
    this.metrics.emitsHandedBack.inc();
    if (this.handedBack.size >= 100_000 && !this.handedBack.has(m.seq)) this.handedBack.clear();
    this.handedBack.set(m.seq, (this.handedBack.get(m.seq) ?? 0) + 1);
    m.nak(HAND_BACK_MS);
  }

  /** Every event of the message is routed again: its publishes are deduplicated, a direct POST may be sent twice. */
  private retry(m: JsMsg, e: Error): void {
    this.logger.warn({ err: e.message, subject: m.subject, seq: m.seq }, 'routing failed; retrying');
    m.nak(1000);
  }

  /** Routes to one listener; a direct webhook delivery (or a queued one, QUEUE_PUBLISHES_MAX) adds its settlement to `background` instead of being awaited. */
  private async publish(event: EmittedEvent, { subscriptionId, listenerId, listenerOwner }: RouteTarget, deliveryCount: number, background: Promise<void>[]): Promise<void> {
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
      if (!offered && this.queuePublishes >= QUEUE_PUBLISHES_MAX) return queue();
      if (!offered) {
        this.queuePublishes++;
        this.queuedByOwner.set(listenerOwner, (this.queuedByOwner.get(listenerOwner) ?? 0) + 1);
        return void background.push(
          queue().finally(() => {
            this.queuePublishes--;
            const left = (this.queuedByOwner.get(listenerOwner) ?? 1) - 1;
            if (left > 0) this.queuedByOwner.set(listenerOwner, left);
            else this.queuedByOwner.delete(listenerOwner);
          }),
        );
      }
      background.push(offered.then((outcome) => (outcome === 'handoff' ? queue() : void this.metrics.webhookRoutes.inc({ path: 'direct' }))));
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
      if (!this.listenerBacklog.admit(listenerId, listenerOwner)) return this.notStarted(listenerOwner, listenerId, event);
      const inv: InvocationMessage = {
        // Derived from the event and the listener, not random: routed again (a redelivered emit), it is the same
        // invocation, which the listener's actor runs once and usage counts once.
        invocationId: subscriptionInvocationId(event, listenerId),
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
