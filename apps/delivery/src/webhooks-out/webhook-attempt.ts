import { EntityManager } from '@mikro-orm/postgresql';
import { AppConfig, Logger } from '@app/config';
import { DeliveryMessage } from '@app/contracts';
import { WaitingRetries } from '@app/db';
import { announceRoutes, NatsService } from '@app/nats';
import { DeliveryMetrics } from '../common/metrics';
import { SubscriptionCache, WebhookTarget } from '../router/subscription-cache';
import { AttemptRecord, DeliveryLog } from './delivery-log';
import { DeliveryItem } from './delivery-item';
import { Sent, SignedPost } from './signed-post';
import { nextDelayMs } from './retry-policy';
import { RetryQueue } from './retry-queue';
import { RetryCatchUp } from './retry-catch-up';

/** How an attempt ended, for the lane: `failed` (the endpoint failed; its retry is queued, or it is exhausted). */
export type Attempted = 'sent' | 'failed' | 'none';

/**
 * One delivery attempt and what follows from its outcome. A failed attempt is recorded, its next attempt is
 * written to the retry queue (`webhook_retries`), and only then is the message acked: waiting retries never
 * occupy the consumer, so a dead endpoint's backlog cannot fill its max_ack_pending and stop the other
 * webhooks. A success is acked first, then recorded, and pulls the webhook's waiting retries forward
 * (catch-up). 410 disables the webhook; attempts past the retry schedule are exhausted. A queued delivery or retry
 * whose event no longer routes to the webhook is dropped unsent.
 */
export class WebhookAttempt {
  constructor(
    private readonly deps: {
      em: EntityManager;
      nats: NatsService;
      cache: SubscriptionCache;
      http: SignedPost;
      log: DeliveryLog;
      retries: RetryQueue;
      /** Waiting retries per account, for WEBHOOK_MAX_RETRIES_PER_ACCOUNT. */
      waiting: WaitingRetries;
      catchUp: RetryCatchUp;
      metrics: DeliveryMetrics;
      config: AppConfig;
      logger: Logger;
    },
  ) {}

  async deliver(m: DeliveryItem): Promise<Attempted> {
    const { cache, log, http, metrics } = this.deps;
    let msg: DeliveryMessage;
    try {
      msg = m.read();
    } catch {
      // term() without a reason: nats-server 2.9 ignores `+TERM <reason>` and redelivers the message after the ack wait, forever.
      m.term(); // not JSON
      return 'none';
    }
    const ev = msg.event;
    const hook = await cache.webhook(msg.webhookId);
    if (!hook || !hook.active) {
      m.term(); // webhook disabled or deleted
      return 'none';
    }
    // Queued or retried, the delivery waited while its route may have gone (the subscription deleted, its owner or
    // maker out of an org): it is dropped, not sent. The router's direct attempts were routed a moment ago.
    if (!m.direct && !(await cache.routes(ev, hook.id))) {
      m.term(); // no longer routed
      metrics.webhookAttempts.inc({ outcome: 'unrouted' });
      return 'none';
    }
    // The retry queue republishes with the attempt number; a redelivery (a replica died mid-attempt), or a message handed
    // back that may have been one, counts the attempts logged.
    const carried = Number.isInteger(msg.attempt) && msg.attempt! > 1 ? msg.attempt! : 1;
    let attempt = carried;
    if (m.deliveryCount > 1 || msg.heldBack) {
      const before = await log.attemptsSoFar(hook.id, ev.emitterId, ev.id);
      // Delivered already, but the ack never reached the stream (lost with a NATS connection, or a crash just after it):
      // the success is on record, so the receiver gets no second copy.
      if (before.succeeded) {
        m.ack();
        metrics.webhookAttempts.inc({ outcome: 'already_delivered' });
        return 'none';
      }
      attempt = Math.max(carried, before.attempts + 1);
    }
    const body = JSON.stringify(ev.event ?? null);
    const now = new Date();
    const base: Omit<AttemptRecord, 'status'> = { webhookId: hook.id, eventId: ev.id, emitterId: ev.emitterId, attempt };
    const { status, retryAfter, record }: Sent =
      hook.secret === undefined
        ? { record: { ...base, error: 'the signing secret or url cannot be decrypted with SECRETS_KEY (was the key changed?)' } }
        : await http.send({ ...hook, secret: hook.secret }, ev, body, now, base);
    if (status !== undefined && status >= 200 && status < 300) {
      // The receiver has the event: ack at once; the attempt row is observability and is written in the background.
      m.ack();
      log.record({ ...record, status: 'succeeded' }).catch((e: Error) => this.deps.logger.warn({ err: e.message, webhook_id: hook.id }, 'recording a successful attempt failed'));
      metrics.webhookAttempts.inc({ outcome: 'succeeded' });
      if (ev.emittedAtMs) metrics.emitToReceipt.observe((Date.now() - ev.emittedAtMs) / 1000);
      this.deps.catchUp.afterSuccess(hook.id, attempt);
      return 'sent';
    }
    if (status === 410) {
      // The attempt is in the log before the webhook shows as disabled: a client that sees `active: false` finds its cause.
      await log.record({ ...record, status: 'disabled' });
      await this.disable(hook, `the endpoint answered 410 Gone at ${now.toISOString()}`);
      await this.deps.retries.drop(hook.id);
      m.term(); // webhook disabled by 410
      metrics.webhookAttempts.inc({ outcome: 'disabled' });
      return 'none';
    }
    if (status !== undefined && status >= 300 && status < 400) record.error = `redirects are not followed (status ${status})`;
    return this.failed(m, msg, hook.ownerId, record, attempt, retryAfter);
  }

  /**
   * Records a failed attempt and queues the next one, then settles the message; gives up past the schedule, or while
   * the webhook's owner has WEBHOOK_MAX_RETRIES_PER_ACCOUNT retries waiting already.
   */
  private async failed(m: DeliveryItem, msg: DeliveryMessage, ownerId: string, record: Sent['record'], attempt: number, retryAfter: Sent['retryAfter']): Promise<Attempted> {
    const { log, metrics, config } = this.deps;
    const ev = msg.event;
    const delay = nextDelayMs(config.webhookRetryDelaysMs, attempt, retryAfter);
    const waiting = this.deps.waiting.of(ownerId);
    const full = config.webhookMaxRetriesPerAccount > 0 && waiting >= config.webhookMaxRetriesPerAccount;
    if (delay === undefined || full) {
      const why = `not retried: this account's webhooks have ${waiting} deliveries waiting to be retried (limit ${config.webhookMaxRetriesPerAccount})`;
      if (full) record.error = record.error ? `${record.error}; ${why}` : why;
      await log.record({ ...record, status: 'exhausted' });
      m.term(); // attempts exhausted, or the account's retries full
      metrics.webhookAttempts.inc({ outcome: full ? 'retries_full' : 'exhausted' });
      this.deps.logger.warn({ webhook_id: msg.webhookId, event_id: ev.id, attempts: attempt, ...(full && { owner_retries_waiting: waiting }) }, full ? "webhook delivery not retried: its account's retries are full" : 'webhook delivery exhausted');
      return 'failed';
    }
    const dueAtMs = Date.now() + delay;
    this.deps.catchUp.noteFailure(msg.webhookId);
    // Both durable before the ack: a crash before it redelivers the message (a duplicate attempt, never a lost one).
    await Promise.all([
      log.record({ ...record, status: 'failed', nextAttemptAtMs: dueAtMs }),
      this.deps.retries.enqueue({ attempt: attempt + 1, dueAtMs, ownerId, message: { webhookId: msg.webhookId, subscriptionId: msg.subscriptionId, event: ev } }),
    ]);
    m.ack();
    metrics.webhookAttempts.inc({ outcome: 'failed' });
    return 'failed';
  }

  private async disable(hook: WebhookTarget, reason: string): Promise<void> {
    this.deps.cache.disableLocally(hook.id);
    await this.deps.em.fork().getConnection().execute(
      `update webhooks set active = false, disabled_reason = ?, updated_at = ? where id = ?`,
      [reason, Math.floor(Date.now() / 1000), hook.id],
      'run',
    );
    await announceRoutes(this.deps.nats, 'webhooks', { listeners: [hook.id] });
    this.deps.logger.warn({ webhook_id: hook.id }, 'webhook disabled: endpoint answered 410');
  }
}
