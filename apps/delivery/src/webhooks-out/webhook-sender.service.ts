import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { ConsumerMessages } from 'nats';
import { APP_CONFIG, AppConfig, Logger } from '@app/config';
import { DeliveryMessage } from '@app/contracts';
import { WaitingRetries } from '@app/db';
import { boundConsumer, ensureDurable, NatsService } from '@app/nats';
import { policyFromConfig } from '@app/net';
import { DeliveryMetrics } from '../common/metrics';
import { LOGGER } from '../common/tokens';
import { SubscriptionCache } from '../router/subscription-cache';
import { DeliveryLog } from './delivery-log';
import { DeliveryItem, directItem, DirectOutcome, streamItem } from './delivery-item';
import { SignedPost } from './signed-post';
import { RetryQueue } from './retry-queue';
import { RetryCatchUp } from './retry-catch-up';
import { directLaneMax, LaneQueue } from './lane-queue';
import { FailingSlots } from './failing-slots';
import { HeldDeliveries } from './held-deliveries';
import { WebhookAttempt } from './webhook-attempt';

const DURABLE = 'webhook-sender';
/**
 * DELIVERIES messages held by the process at most. Above it the pull loop pauses
 * (backpressure: while its iterator is not read, the client asks the server for no
 * more, where a callback consumer would go on asking), after pushing back the excess
 * of slow webhooks (test/delivery-held-bound.e2e-spec.ts), and again every
 * PAUSED_CHECK_MS while it waits: a webhook whose requests take over SLOW_REQUEST_MS
 * keeps LANE_QUEUE_MAX messages, one whose requests made no progress for that long
 * keeps WEBHOOK_CONCURRENCY, and each parks the rest in the retry queue (acknowledged,
 * as held-back deliveries are, below) until its backlog should have drained
 * (test/delivery-slow-push-back.e2e-spec.ts). So a slow or hung endpoint never fills
 * the process, nor the consumer's max_ack_pending, and never delays the others, and
 * a fast one keeps its backlog.
 */
export const HELD_MAX = 10_000;
const LANE_QUEUE_MAX = 1000;
const SLOW_REQUEST_MS = 5_000;
/** While the pull loop waits for room, how often it looks for lanes that stalled since. */
const PAUSED_CHECK_MS = 1_000;
/** A slow lane's excess is due again when the lane should have drained, at most this long after (±20 %). */
const SLOW_PUSH_BACK_MAX_MS = 30_000;

/** Direct events held by the process at most (their emits wait unacknowledged), apart from HELD_MAX. */
const DIRECT_HELD_MAX = HELD_MAX / 2;
/**
 * The share of HELD_MAX and of DIRECT_HELD_MAX kept for the accounts below it: an account whose webhooks hold
 * more than a share takes no more while less than a share is free. Its DELIVERIES messages are held back (below)
 * and its direct events go to DELIVERIES. Many slow or silent webhooks of one account (each holding its requests
 * until WEBHOOK_TIMEOUT_MS) filled the process, and every other account's deliveries waited behind them for
 * minutes; an account alone may still use three quarters of the room (a fixed quarter sent a busy account's
 * overflow round the stream and tripled its p99 under overload).
 */
const OWNER_SHARE = 1 / 4;
/**
 * A DELIVERIES message whose account holds WEBHOOK_HELD_PER_ACCOUNT messages here (or its share, above) is held
 * back: parked in the retry queue, due again in this long (±50 %), and acknowledged. Not a nak: a nak'd message,
 * delayed or not, stays among the consumer's max_ack_pending (shared by every account), so one account's hung
 * webhooks filled it with their waiting and naked messages and no other account's queued delivery was handed out.
 * Held back again, it waits longer: this long times the times it was held back, up to HELD_BACK_ROUNDS_MAX times.
 * An account's backlog held back every 10 s was written to Postgres and read again about 3,000 times a second in
 * test/delivery-failure-storm.
 */
const HELD_BACK_DELAY_MS = 10_000;
const HELD_BACK_ROUNDS_MAX = 4;
/** Direct deliveries (from the router, no DELIVERIES hop) a webhook takes only while it is healthy: no failure seen for this long… */
const DIRECT_AFTER_FAILURE_MS = 60_000;
/** …answers faster than this on average, and has room in its lane for direct events (`directLaneMax`). */
const DIRECT_LATENCY_MAX_MS = 1000;
/** How often the state kept per webhook (lane, catch-up, signer) is dropped for webhooks that are gone. */
const FORGET_GONE_EVERY_MS = 15_000;

interface Lane {
  queue: LaneQueue<DeliveryItem>;
  active: number;
  /** Moving average of request durations. */
  avgLatencyMs: number;
  /** Last completion, or when the lane last became busy. */
  lastProgressMs: number;
  /** Its last attempt here failed: its attempts take their account's FailingSlots. */
  failing: boolean;
}

/**
 * Sends DELIVERIES (and events the router hands over directly) to webhook endpoints: many webhooks in
 * parallel, bounded concurrency per webhook, each owner's share of the room held, failing webhooks' attempts
 * bounded per account. Each attempt and its outcome is a WebhookAttempt.
 */
@Injectable()
export class WebhookSenderService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly lanes = new Map<string, Lane>();
  private readonly http: SignedPost;
  private readonly log: DeliveryLog;
  private messages?: ConsumerMessages;
  private inFlight = 0;
  /** Deliveries taken and not yet settled: stream messages are kept alive so a crash hands them over after one ack wait. */
  private readonly held = new HeldDeliveries({ stream: HELD_MAX, direct: DIRECT_HELD_MAX, share: OWNER_SHARE });
  private keepAlive?: NodeJS.Timeout;
  private pruner?: NodeJS.Timeout;
  private forgetter?: NodeJS.Timeout;
  private resume?: () => void;
  private readonly retries: RetryQueue;
  private readonly waiting: WaitingRetries;
  /** Per webhook: last failure seen here, and pulling its waiting retries forward once it answers again. */
  private readonly catchUp: RetryCatchUp;
  private readonly failingSlots: FailingSlots;
  private readonly attempt: WebhookAttempt;
  private stopping = false;

  constructor(
    private readonly nats: NatsService,
    private readonly em: EntityManager,
    private readonly cache: SubscriptionCache,
    private readonly metrics: DeliveryMetrics,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.http = new SignedPost(policyFromConfig(config), metrics, config.webhookTimeoutMs, config.webhookConcurrency, config.webhookLookupsAtOnce);
    this.log = new DeliveryLog(em, config.deliveryLogAsyncCommit);
    this.retries = new RetryQueue(em, nats, logger);
    this.waiting = new WaitingRetries(em, config.webhookMaxRetriesPerAccount, config.webhookRetriesCountMs, (message) => logger.warn(message));
    this.catchUp = new RetryCatchUp(this.retries, logger, (id) => this.lanes.get(id)?.queue.length ?? 0);
    this.failingSlots = new FailingSlots(config.webhookFailingInFlightPerAccount);
    this.attempt = new WebhookAttempt({ em, nats, cache, http: this.http, log: this.log, retries: this.retries, waiting: this.waiting, catchUp: this.catchUp, metrics, config, logger });
    metrics.watchRetries(() => this.retries.waiting());
    metrics.watchSender(() => ({ direct: this.held.direct, queue: this.held.messages, inFlight: this.inFlight, failing: this.failingSlots.figures() }));
  }

  async onApplicationBootstrap(): Promise<void> {
    const names = this.nats.names;
    const ackWaitMs = Math.max(this.config.deliveryAckWaitMs, this.config.webhookTimeoutMs + 1000);
    await ensureDurable(this.nats.jsm, names.deliveriesStream, {
      durable_name: DURABLE,
      filter_subject: names.allDeliveries,
      max_ack_pending: this.config.webhookMaxAckPending,
      ack_wait: ackWaitMs * 1_000_000,
      max_deliver: -1,
    });
    const consumer = await boundConsumer(this.nats.js, names.deliveriesStream, DURABLE);
    this.messages = await consumer.consume({ max_messages: 1000 });
    this.retries.start();
    if (this.config.webhookMaxRetriesPerAccount > 0) this.waiting.start();
    this.keepAlive = setInterval(() => this.held.forEach((m) => m.working()), Math.max(500, ackWaitMs / 3));
    // Attempt rows are kept as long as the EMITS stream keeps the events themselves, WEBHOOK_DELIVERIES_RETENTION per webhook.
    this.pruner = setInterval(() => void this.log.prune(Date.now() - this.config.emitsMaxAgeSeconds * 1000, this.config.webhookDeliveriesRetention).catch((e: Error) => this.logger.warn({ err: e.message }, 'pruning webhook_deliveries failed')), 600_000);
    this.forgetter = setInterval(() => this.forgetGone(), FORGET_GONE_EVERY_MS);
    void (async () => {
      for await (const m of this.messages!) {
        const item = streamItem(m);
        const over = this.accountOver(item.webhookId);
        if (over) this.holdBack(item, over);
        else this.dispatch(item);
        if (this.held.messages >= HELD_MAX) this.pushBackSlowLanes();
        if (this.held.messages >= HELD_MAX) await this.untilRoom();
      }
    })().catch((e: Error) => this.logger.error({ err: e.message }, 'webhook consumer stopped'));
  }

  async onApplicationShutdown(): Promise<void> {
    this.messages?.stop();
    this.stopping = true;
    this.catchUp.stop();
    this.waiting.stop();
    clearInterval(this.keepAlive);
    clearInterval(this.pruner);
    clearInterval(this.forgetter);
    for (const lane of this.lanes.values()) for (const m of lane.queue.drain()) m.nak();
    const deadline = Date.now() + 5_000;
    while (this.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await this.retries.stop();
    await this.log.flush(); // the attempt rows still waiting in a batch
    await this.http.close();
  }

  /** Figures for /healthz. */
  stats(): { held: number; in_flight: number; lanes: number } {
    return { held: this.held.size, in_flight: this.inFlight, lanes: this.lanes.size };
  }

  /**
   * Takes a routed event straight from the router, without the DELIVERIES hop,
   * when its webhook is healthy (no recent failure, fast, short queue) and this
   * process has room; else undefined (the router publishes it to DELIVERIES).
   * Resolves once the delivery is settled: `done` (delivered, or its next
   * attempt durably queued, or dropped), `handoff` (not attempted: publish it).
   */
  offer(msg: DeliveryMessage, deliveryCount: number): Promise<DirectOutcome> | undefined {
    if (this.stopping || this.held.direct >= DIRECT_HELD_MAX) return undefined;
    const lane = this.lanes.get(msg.webhookId);
    if (lane && lane.queue.directLength >= directLaneMax(lane.avgLatencyMs, this.config.webhookConcurrency, DIRECT_HELD_MAX)) return undefined;
    if (!this.healthy(msg.webhookId, lane) || this.ownerFull(msg.webhookId)) return undefined;
    const { item, outcome } = directItem(msg, deliveryCount);
    this.dispatch(item);
    return outcome;
  }

  /** Whether the webhook takes direct events: no failure seen here lately, fast on average, not stalled. */
  private healthy(webhookId: string, lane: Lane | undefined): boolean {
    const now = Date.now();
    if (lane && (lane.avgLatencyMs > DIRECT_LATENCY_MAX_MS || (lane.active > 0 && now - lane.lastProgressMs > DIRECT_LATENCY_MAX_MS))) return false;
    const failedAtMs = this.catchUp.failedAtMs(webhookId);
    return !(failedAtMs && now - failedAtMs < DIRECT_AFTER_FAILURE_MS);
  }

  /** Whether the webhook's owner holds more than its share of the direct room while less than a share is free. */
  private ownerFull(webhookId: string): boolean {
    return this.held.ownerFull(this.cache.ownerOf(webhookId), true);
  }

  /** Why the webhook's owner takes no more DELIVERIES messages now: its WEBHOOK_HELD_PER_ACCOUNT, or its share of the room. */
  private accountOver(webhookId: string): 'account' | 'share' | undefined {
    const owner = this.cache.ownerOf(webhookId);
    if (!owner) return undefined; // not loaded yet: held alone, like every delivery of an unknown owner
    if (this.held.messagesOf(owner) >= this.config.webhookHeldPerAccount) return 'account';
    return this.held.ownerFull(owner, false) ? 'share' : undefined;
  }

  /** Parks a message its account has no room for (HELD_BACK_DELAY_MS), then acks it; if parking fails, naks it. */
  private holdBack(item: DeliveryItem, reason: 'account' | 'share'): void {
    let msg: DeliveryMessage;
    try {
      msg = item.read();
    } catch {
      return this.dispatch(item); // not JSON: its attempt terms it
    }
    const delayMs = HELD_BACK_DELAY_MS * Math.min((msg.heldBack ?? 0) + 1, HELD_BACK_ROUNDS_MAX);
    this.park(item, msg, reason, Math.round(delayMs * (0.5 + Math.random())), HELD_BACK_DELAY_MS);
  }

  /**
   * Parks a delivery not attempted now in the retry queue, due in `delayMs`, and acks it (a direct event's emit is
   * then acknowledged by the router: the parked row comes to DELIVERIES); if parking fails, naks it (`nakMs`).
   */
  private park(item: DeliveryItem, msg: DeliveryMessage, reason: 'account' | 'share' | 'slow', delayMs: number, nakMs: number): void {
    this.metrics.webhookHeldBack.inc({ reason });
    void this.retries.holdBack(msg, Date.now() + delayMs, this.cache.ownerOf(item.webhookId)).then(
      () => item.ack(),
      (e: Error) => {
        this.logger.warn({ err: e.message, webhook_id: item.webhookId }, 'holding back a webhook delivery failed; it comes again');
        item.nak(nakMs);
      },
    );
  }

  private dispatch(m: DeliveryItem): void {
    const webhookId = m.webhookId;
    let lane = this.lanes.get(webhookId);
    if (!lane) this.lanes.set(webhookId, (lane = { queue: new LaneQueue(), active: 0, avgLatencyMs: 0, lastProgressMs: Date.now(), failing: false }));
    this.held.add(m, this.cache.ownerOf(webhookId) ?? '');
    if (lane.active === 0 && lane.queue.length === 0) lane.lastProgressMs = Date.now();
    lane.queue.push(m, m.direct);
    this.pump(webhookId, lane);
  }

  private pump(webhookId: string, lane: Lane): void {
    // A failing webhook's attempts wait for their account's turn (FailingSlots); an owner not loaded yet counts alone.
    const owner = this.cache.ownerOf(webhookId) ?? webhookId;
    while (lane.active < this.config.webhookConcurrency && lane.queue.length) {
      if (lane.failing && !this.healthy(webhookId, lane)) this.handBackDirect(lane);
      const slot = lane.failing;
      if (slot && !this.failingSlots.take(owner, webhookId)) return;
      const m = lane.queue.shift();
      if (!m) return this.releaseSlot(slot, owner);
      if (m.direct && !this.healthy(webhookId, lane)) {
        // The webhook failed or slowed down since the router handed this over: not attempted here, it goes to DELIVERIES.
        this.held.release(m);
        m.nak();
        this.releaseSlot(slot, owner);
        continue;
      }
      lane.active++;
      this.inFlight++;
      const started = Date.now();
      void this.attempt.deliver(m)
        .then((attempted) => {
          if (attempted !== 'none') lane.failing = attempted === 'failed';
        })
        .catch((e: Error) => {
          this.logger.error({ err: e.message, webhook_id: webhookId }, 'delivery failed unexpectedly; retrying');
          m.nak(1000);
        })
        .finally(() => {
          this.held.release(m);
          this.countDone(lane, Date.now() - started);
          lane.active--;
          this.inFlight--;
          this.releaseSlot(slot, owner);
          if (lane.queue.length) this.pump(webhookId, lane);
        });
    }
  }

  /** Gives back a failing webhook's slot and lets the account's waiting webhooks take it in turn. */
  private releaseSlot(taken: boolean, owner: string): void {
    if (!taken) return;
    this.failingSlots.release(owner);
    for (let id = this.failingSlots.next(owner); id !== undefined; id = this.failingSlots.next(owner)) {
      const lane = this.lanes.get(id);
      if (lane) this.pump(id, lane);
    }
  }

  /** A failing webhook's direct events go to DELIVERIES at once rather than wait for a slot with their emits unacknowledged. */
  private handBackDirect(lane: Lane): void {
    for (const m of lane.queue.drainDirect()) {
      this.held.release(m);
      m.nak();
    }
  }

  /**
   * Parks the excess of slow lanes in the retry queue (acknowledged: not a nak, which would keep it among the
   * consumer's max_ack_pending for its whole delay), each delivery due when its lane should have drained.
   */
  private pushBackSlowLanes(): void {
    const now = Date.now();
    for (const lane of this.lanes.values()) {
      const stalled = lane.active > 0 && now - lane.lastProgressMs > SLOW_REQUEST_MS;
      const keep = stalled ? this.config.webhookConcurrency : LANE_QUEUE_MAX;
      if (lane.queue.length <= keep || (lane.avgLatencyMs <= SLOW_REQUEST_MS && !stalled)) continue;
      const perRequestMs = Math.max(lane.avgLatencyMs, now - lane.lastProgressMs, SLOW_REQUEST_MS);
      const drainMs = Math.min(SLOW_PUSH_BACK_MAX_MS, (lane.queue.length / this.config.webhookConcurrency) * perRequestMs);
      for (const m of lane.queue.excess(keep)) {
        this.held.release(m);
        const delayMs = Math.round(drainMs * (0.8 + 0.4 * Math.random()));
        let msg: DeliveryMessage;
        try {
          msg = m.read();
        } catch {
          m.nak(delayMs); // not JSON: its attempt, once it comes again, terms it
          continue;
        }
        this.park(m, msg, 'slow', delayMs, delayMs);
      }
    }
  }

  /**
   * Resolves once the held messages fall to 80 % of HELD_MAX: as requests complete, or as lanes that stall while the
   * loop waits are pushed back (checked every PAUSED_CHECK_MS). Before, with every held request hanging, nothing
   * completed and nothing was pushed back until WEBHOOK_TIMEOUT_MS: two accounts' hung webhooks (each under
   * LANE_QUEUE_MAX waiting) held the replica full, and every other account's queued deliveries waited that long.
   */
  private untilRoom(): Promise<void> {
    this.metrics.webhookPaused.inc();
    return new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (!this.stopping) this.pushBackSlowLanes();
        if (this.stopping || this.held.messages < HELD_MAX * 0.8) this.resume?.();
      }, PAUSED_CHECK_MS);
      this.resume = () => {
        clearInterval(check);
        this.resume = undefined;
        resolve();
      };
    });
  }

  /**
   * Drops the idle lanes, catch-up state and signers of webhooks the routes no longer know (deleted): a tenant who
   * creates, feeds and deletes webhooks over and over grew this process without end. A webhook created since the last
   * route read may lose its lane too, and starts again as a new one.
   */
  private forgetGone(): void {
    for (const [id, lane] of this.lanes) {
      if (lane.active || lane.queue.length || this.cache.ownerOf(id) !== undefined) continue;
      this.lanes.delete(id);
      this.catchUp.forget(id);
      this.http.forget(id);
    }
  }

  private countDone(lane: Lane, latencyMs: number): void {
    lane.avgLatencyMs = lane.avgLatencyMs === 0 ? latencyMs : lane.avgLatencyMs * 0.9 + latencyMs * 0.1;
    lane.lastProgressMs = Date.now();
    if (this.held.messages < HELD_MAX * 0.8) this.resume?.();
  }
}
