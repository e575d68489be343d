import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { ConsumerMessages } from 'nats';
import { APP_CONFIG, AppConfig, Logger } from '@app/config';
import { DeliveryMessage } from '@app/contracts';
import { NatsService } from '@app/nats';
import { policyFromConfig } from '@app/net';
import { ensureDurable } from '../common/durable-consumer';
import { DeliveryMetrics } from '../common/metrics';
import { LOGGER } from '../common/tokens';
import { SubscriptionCache, WebhookTarget } from '../router/subscription-cache';
import { AttemptRecord, DeliveryLog } from './delivery-log';
import { DeliveryItem, directItem, DirectOutcome, streamItem } from './delivery-item';
import { WebhookSigner as Signer } from './webhook-signer';
import { PostError, WebhookHttp } from './http-post';
import { nextDelayMs } from './retry-policy';
import { CATCH_UP_BATCH, RetryQueue } from './retry-queue';

const DURABLE = 'webhook-sender';
/** Requests in flight per webhook: a slow endpoint holds at most this many connections. */
const PER_WEBHOOK_CONCURRENCY = 32;
/**
 * Messages held by the process at most. Above it the pull loop pauses
 * (backpressure), after pushing back the excess of slow webhooks: a webhook
 * whose requests take over SLOW_REQUEST_MS (or make no progress for that long)
 * keeps LANE_QUEUE_MAX messages and returns the rest to the stream until its
 * backlog should have drained. So a slow or hung endpoint never fills the
 * process and never delays the others, and a fast one keeps its backlog.
 */
const HELD_MAX = 10_000;
const LANE_QUEUE_MAX = 1000;
const SLOW_REQUEST_MS = 5_000;
const RESPONSE_BODY_MAX = 1024;
/** Least time between two catch-ups of one webhook. */
const CATCH_UP_EVERY_MS = 250;
/** A success looks for waiting retries (kept by any replica) at least this often per webhook. */
const CATCH_UP_CHECK_MS = 10_000;
/** After a failure seen here, every success of the webhook looks for waiting retries (at most once per CATCH_UP_EVERY_MS). */
const CATCH_UP_AFTER_FAILURE_MS = 3_600_000;

/** An attempt as recorded, with the status and Retry-After when the endpoint answered. */
interface Sent {
  status?: number;
  retryAfter?: string | string[];
  record: Omit<AttemptRecord, 'status'>;
}

interface CatchUp {
  failedAtMs: number;
  succeededAtMs: number;
  checkedAtMs: number;
  timer?: NodeJS.Timeout;
}

/** Direct deliveries (from the router, no DELIVERIES hop) a webhook takes only while it is healthy: no failure seen for this long… */
const DIRECT_AFTER_FAILURE_MS = 60_000;
/** …answers faster than this on average… */
const DIRECT_LATENCY_MAX_MS = 1000;
/** …and has fewer than this many deliveries waiting or in flight here. */
const DIRECT_LANE_MAX = PER_WEBHOOK_CONCURRENCY * 4;

interface Lane {
  queue: DeliveryItem[];
  active: number;
  /** Moving average of request durations. */
  avgLatencyMs: number;
  /** Last completion, or when the lane last became busy. */
  lastProgressMs: number;
}

/**
 * Sends DELIVERIES to webhook endpoints: many webhooks in parallel, bounded
 * concurrency per webhook, Standard Webhooks signatures, 410 disables the
 * webhook. A failed attempt is recorded, its next attempt is written to the
 * retry queue (`webhook_retries`), and only then is the message acked: waiting
 * retries never occupy the consumer, so a dead endpoint's backlog cannot fill
 * its max_ack_pending and stop the other webhooks. A success is acked first,
 * then recorded, and pulls the webhook's waiting retries forward (catch-up).
 */
/** The `webhook-id` of an event: its event id (DESIGN.md); `x-pd-emitter-id` tells emitters apart. */
export const webhookIdOf = (ev: { id: string }): string => ev.id;

@Injectable()
export class WebhookSenderService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly lanes = new Map<string, Lane>();
  private readonly signers = new Map<string, { secret: string; signer: Signer }>();
  private readonly http: WebhookHttp;
  private readonly log: DeliveryLog;
  private messages?: ConsumerMessages;
  private inFlight = 0;
  /** Deliveries taken and not yet settled: stream messages are kept alive so a crash hands them over after one ack wait. */
  private readonly held = new Set<DeliveryItem>();
  private keepAlive?: NodeJS.Timeout;
  private pruner?: NodeJS.Timeout;
  private resume?: () => void;
  private readonly retries: RetryQueue;
  /** Per webhook: last failure seen here and last catch-up, for deciding when a success pulls retries forward. */
  private readonly catchUps = new Map<string, CatchUp>();
  private stopping = false;

  constructor(
    private readonly nats: NatsService,
    private readonly em: EntityManager,
    private readonly cache: SubscriptionCache,
    private readonly metrics: DeliveryMetrics,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.http = new WebhookHttp(policyFromConfig(config));
    this.log = new DeliveryLog(em);
    this.retries = new RetryQueue(em, nats, logger);
    metrics.watchRetries(() => this.retries.waiting());
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
    const consumer = await this.nats.js.consumers.get(names.deliveriesStream, DURABLE);
    this.messages = await consumer.consume({ max_messages: 1000 });
    this.retries.start();
    this.keepAlive = setInterval(() => this.held.forEach((m) => m.working()), Math.max(500, ackWaitMs / 3));
    // Attempt rows are kept as long as the EMITS stream keeps the events themselves.
    this.pruner = setInterval(() => void this.log.prune(Date.now() - this.config.emitsMaxAgeSeconds * 1000).catch((e: Error) => this.logger.warn({ err: e.message }, 'pruning webhook_deliveries failed')), 600_000);
    void (async () => {
      for await (const m of this.messages!) {
        this.dispatch(streamItem(m));
        if (this.held.size >= HELD_MAX) this.pushBackSlowLanes();
        if (this.held.size >= HELD_MAX) await new Promise<void>((r) => (this.resume = r));
      }
    })().catch((e: Error) => this.logger.error({ err: e.message }, 'webhook consumer stopped'));
  }

  async onApplicationShutdown(): Promise<void> {
    this.messages?.stop();
    this.stopping = true;
    for (const c of this.catchUps.values()) clearTimeout(c.timer);
    clearInterval(this.keepAlive);
    clearInterval(this.pruner);
    for (const lane of this.lanes.values()) for (const m of lane.queue.splice(0)) m.nak();
    const deadline = Date.now() + 5_000;
    while (this.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await this.retries.stop();
    this.http.close();
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
    if (this.stopping || this.held.size >= HELD_MAX) return undefined;
    const lane = this.lanes.get(msg.webhookId);
    if (lane && (lane.queue.length + lane.active >= DIRECT_LANE_MAX || lane.avgLatencyMs > DIRECT_LATENCY_MAX_MS)) return undefined;
    const failedAtMs = this.catchUps.get(msg.webhookId)?.failedAtMs ?? 0;
    if (failedAtMs && Date.now() - failedAtMs < DIRECT_AFTER_FAILURE_MS) return undefined;
    const { item, outcome } = directItem(msg, deliveryCount);
    this.dispatch(item);
    return outcome;
  }

  private dispatch(m: DeliveryItem): void {
    const webhookId = m.webhookId;
    let lane = this.lanes.get(webhookId);
    if (!lane) this.lanes.set(webhookId, (lane = { queue: [], active: 0, avgLatencyMs: 0, lastProgressMs: Date.now() }));
    this.held.add(m);
    if (lane.active === 0 && lane.queue.length === 0) lane.lastProgressMs = Date.now();
    lane.queue.push(m);
    this.pump(webhookId, lane);
  }

  private pump(webhookId: string, lane: Lane): void {
    while (lane.active < PER_WEBHOOK_CONCURRENCY && lane.queue.length) {
      const m = lane.queue.shift()!;
      lane.active++;
      this.inFlight++;
      const started = Date.now();
      void this.deliver(m)
        .catch((e: Error) => {
          this.logger.error({ err: e.message, webhook_id: webhookId }, 'delivery failed unexpectedly; retrying');
          m.nak(1000);
        })
        .finally(() => {
          this.held.delete(m);
          this.countDone(lane, Date.now() - started);
          lane.active--;
          this.inFlight--;
          if (lane.queue.length) this.pump(webhookId, lane);
        });
    }
  }

  /** Returns the excess of slow lanes to the stream, each message due back when its lane should have drained. */
  private pushBackSlowLanes(): void {
    const now = Date.now();
    for (const lane of this.lanes.values()) {
      const stalled = lane.active > 0 && now - lane.lastProgressMs > SLOW_REQUEST_MS;
      if (lane.queue.length <= LANE_QUEUE_MAX || (lane.avgLatencyMs <= SLOW_REQUEST_MS && !stalled)) continue;
      const perRequestMs = Math.max(lane.avgLatencyMs, now - lane.lastProgressMs, SLOW_REQUEST_MS);
      const drainMs = (lane.queue.length / PER_WEBHOOK_CONCURRENCY) * perRequestMs;
      for (const m of lane.queue.splice(LANE_QUEUE_MAX)) {
        this.held.delete(m);
        m.nak(Math.round(Math.min(30_000, drainMs) * (0.8 + 0.4 * Math.random())));
      }
    }
  }

  private countDone(lane: Lane, latencyMs: number): void {
    lane.avgLatencyMs = lane.avgLatencyMs === 0 ? latencyMs : lane.avgLatencyMs * 0.9 + latencyMs * 0.1;
    lane.lastProgressMs = Date.now();
    if (this.held.size < HELD_MAX * 0.8 && this.resume) {
      this.resume();
      this.resume = undefined;
    }
  }

  private signer(hookId: string, secret: string): Signer {
    const hit = this.signers.get(hookId);
    if (hit && hit.secret === secret) return hit.signer;
    const signer = new Signer(secret);
    this.signers.set(hookId, { secret, signer });
    return signer;
  }

  private async deliver(m: DeliveryItem): Promise<void> {
    let msg: DeliveryMessage;
    try {
      msg = m.read();
    } catch {
      // term() without a reason: nats-server 2.9 ignores `+TERM <reason>` and redelivers the message after the ack wait, forever.
      m.term(); // not JSON
      return;
    }
    const ev = msg.event;
    const hook = await this.cache.webhook(msg.webhookId);
    if (!hook || !hook.active) {
      m.term(); // webhook disabled or deleted
      return;
    }
    // The retry queue republishes with the attempt number; a redelivery (a replica died mid-attempt) counts the attempts logged.
    const carried = Number.isInteger(msg.attempt) && msg.attempt! > 1 ? msg.attempt! : 1;
    let attempt = carried;
    if (m.deliveryCount > 1) {
      const before = await this.log.attemptsSoFar(hook.id, ev.emitterId, ev.id);
      // Delivered already, but the ack never reached the stream (lost with a NATS connection, or a crash just after it):
      // the success is on record, so the receiver gets no second copy.
      if (before.succeeded) {
        m.ack();
        this.metrics.webhookAttempts.inc({ outcome: 'already_delivered' });
        return;
      }
      attempt = Math.max(carried, before.attempts + 1);
    }
    const body = JSON.stringify(ev.event ?? null);
    const now = new Date();
    const base: Omit<AttemptRecord, 'status'> = { webhookId: hook.id, eventId: ev.id, emitterId: ev.emitterId, attempt };
    const { status, retryAfter, record }: Sent =
      hook.secret === undefined
        ? { record: { ...base, error: 'the signing secret cannot be decrypted with SECRETS_KEY (was the key changed?)' } }
        : await this.post({ ...hook, secret: hook.secret }, ev, body, now, base);
    if (status !== undefined && status >= 200 && status < 300) {
      // The receiver has the event: ack at once; the attempt row is observability and is written in the background.
      m.ack();
      this.log.record({ ...record, status: 'succeeded' }).catch((e: Error) => this.logger.warn({ err: e.message, webhook_id: hook.id }, 'recording a successful attempt failed'));
      this.metrics.webhookAttempts.inc({ outcome: 'succeeded' });
      if (ev.emittedAtMs) this.metrics.emitToReceipt.observe((Date.now() - ev.emittedAtMs) / 1000);
      this.maybeCatchUp(hook.id, attempt);
      return;
    }
    if (status === 410) {
      await this.disable(hook, `the endpoint answered 410 Gone at ${now.toISOString()}`);
      await this.retries.drop(hook.id);
      await this.log.record({ ...record, status: 'disabled' });
      m.term(); // webhook disabled by 410
      this.metrics.webhookAttempts.inc({ outcome: 'disabled' });
      return;
    }
    if (status !== undefined && status >= 300 && status < 400) record.error = `redirects are not followed (status ${status})`;
    const delay = nextDelayMs(this.config.webhookRetryDelaysMs, attempt, retryAfter);
    if (delay === undefined) {
      await this.log.record({ ...record, status: 'exhausted' });
      m.term(); // attempts exhausted
      this.metrics.webhookAttempts.inc({ outcome: 'exhausted' });
      this.logger.warn({ webhook_id: hook.id, event_id: ev.id, attempts: attempt }, 'webhook delivery exhausted');
      return;
    }
    const dueAtMs = Date.now() + delay;
    this.noteFailure(hook.id);
    // Both durable before the ack: a crash before it redelivers the message (a duplicate attempt, never a lost one).
    await Promise.all([
      this.log.record({ ...record, status: 'failed', nextAttemptAtMs: dueAtMs }),
      this.retries.enqueue({ attempt: attempt + 1, dueAtMs, message: { webhookId: msg.webhookId, subscriptionId: msg.subscriptionId, event: ev } }),
    ]);
    m.ack();
    this.metrics.webhookAttempts.inc({ outcome: 'failed' });
  }

  /** One signed POST. */
  private async post(hook: WebhookTarget & { secret: string }, ev: DeliveryMessage['event'], body: string, now: Date, base: Omit<AttemptRecord, 'status'>): Promise<Sent> {
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'event-source-service-webhooks/1',
      // The same on every retry: receivers dedupe on it (with x-pd-emitter-id when fed by several sources).
      'webhook-id': webhookIdOf(ev),
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': this.signer(hook.id, hook.secret).sign(webhookIdOf(ev), now, body),
      'x-pd-emitter-id': ev.emitterId,
      'x-pd-event-name': ev.name ?? '',
      'x-pd-emit-id': ev.emitId,
      'x-pd-event-id': ev.id,
    };
    try {
      const res = await this.http.post(hook.url, headers, body, this.config.webhookTimeoutMs, RESPONSE_BODY_MAX);
      this.metrics.webhookLatency.observe({ outcome: res.status >= 200 && res.status < 300 ? 'success' : 'failure' }, res.latencyMs / 1000);
      return { status: res.status, retryAfter: res.headers['retry-after'], record: { ...base, responseCode: res.status, latencyMs: res.latencyMs, responseBody: res.body } };
    } catch (e) {
      const err = e as PostError;
      return { record: { ...base, latencyMs: err.latencyMs, error: err.message } };
    }
  }

  private noteFailure(webhookId: string): void {
    this.catchUpState(webhookId).failedAtMs = Date.now();
  }

  private catchUpState(webhookId: string): CatchUp {
    let c = this.catchUps.get(webhookId);
    if (!c) this.catchUps.set(webhookId, (c = { failedAtMs: 0, succeededAtMs: 0, checkedAtMs: 0 }));
    return c;
  }

  /**
   * After a success, pulls the webhook's waiting retries forward so an
   * endpoint that came back gets its backlog within seconds. Bounded and
   * paced by the endpoint: CATCH_UP_BATCH rows at a time, at most every
   * CATCH_UP_EVERY_MS per webhook, only once the previous batch has been
   * republished and while the webhook's queue here is short (a slow endpoint
   * is not flooded, and cannot make the process hold too much). A follow-up
   * timer takes the next batch, and stops as soon as the endpoint fails again
   * (its next success starts over). A webhook with no failure seen here
   * (another replica may have queued its retries) is checked every
   * CATCH_UP_CHECK_MS.
   */
  private maybeCatchUp(webhookId: string, attempt: number, followUp = false): void {
    const now = Date.now();
    const c = this.catchUpState(webhookId);
    if (!followUp) c.succeededAtMs = now;
    else if (c.failedAtMs > c.succeededAtMs) return; // failing again: no more pulling forward
    const suspect = followUp || attempt > 1 || now - c.failedAtMs < CATCH_UP_AFTER_FAILURE_MS;
    if (!suspect && now - c.checkedAtMs < CATCH_UP_CHECK_MS) return;
    if (now - c.checkedAtMs < CATCH_UP_EVERY_MS || (this.lanes.get(webhookId)?.queue.length ?? 0) > CATCH_UP_BATCH / 4) {
      if (suspect) this.followUp(webhookId, c);
      return;
    }
    c.checkedAtMs = now;
    this.retries
      .catchUp(webhookId)
      .then((n) => {
        if (n > 0) this.logger.info({ webhook_id: webhookId, retries: n }, 'endpoint is back: waiting retries pulled forward');
        // More may wait, or the last batch is still being republished: look again shortly.
        if (n !== 0) this.followUp(webhookId, c);
        // Nothing waits any more: back to the occasional check until the next failure.
        else if (c.failedAtMs <= now) c.failedAtMs = 0;
      })
      .catch((e: Error) => this.logger.warn({ err: e.message, webhook_id: webhookId }, 'pulling retries forward failed'));
  }

  private followUp(webhookId: string, c: CatchUp): void {
    if (c.timer || this.stopping) return;
    c.timer = setTimeout(() => {
      c.timer = undefined;
      this.maybeCatchUp(webhookId, 2, true);
    }, CATCH_UP_EVERY_MS);
    c.timer.unref?.();
  }

  private async disable(hook: WebhookTarget, reason: string): Promise<void> {
    this.cache.disableLocally(hook.id);
    await this.em.fork().getConnection().execute(
      `update webhooks set active = false, disabled_reason = ?, updated_at = ? where id = ?`,
      [reason, Math.floor(Date.now() / 1000), hook.id],
      'run',
    );
    this.nats.nc.publish(this.nats.names.changed('webhooks'));
    this.logger.warn({ webhook_id: hook.id }, 'webhook disabled: endpoint answered 410');
  }
}
