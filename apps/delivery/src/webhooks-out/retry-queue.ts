import { EntityManager } from '@mikro-orm/postgresql';
import { DeliveryMessage, encodeJson, newId } from '@app/contracts';
import type { Logger } from '@app/config';
import type { NatsService } from '@app/nats';
import { BatchWriter } from '../common/batch-writer';
import { DuePoller, dueFairly, untilDue } from '../common/due-poller';
import { fromExactJson } from '../common/pg-text';
import { inTransaction } from '../common/transaction';

export interface WaitingRetry {
  /** The attempt the retry will be: 2 for the first retry. */
  attempt: number;
  dueAtMs: number;
  message: DeliveryMessage;
  /** Its webhook's owner, the account whose share of each poll it is taken in; unknown here, read from `webhooks`. */
  ownerId?: string;
}

const MAX_ROWS = 200;
const LINGER_MS = 10;
/** Due rows republished per poll (a poll that found some polls again at once). */
const POLL_BATCH = 500;
/** One poll's due retries, each account its share (`dueFairly`). */
const DUE_FAIRLY = dueFairly('webhook_retries', ['id', 'attempt', 'message'], POLL_BATCH);
/**
 * Gives due rows written without an owner (before the column existed, or by a replica of an earlier release during
 * an upgrade) their webhook's, before the poll takes each account's share: a batch at a time, as they come due,
 * rather than in one long update of the whole table. A row whose webhook is gone keeps none (it is dropped unsent).
 */
const FILL_OWNERS = `
  update webhook_retries r set owner_id = w.owner_id from webhooks w
  where r.id in (select id from webhook_retries where owner_id = '' and due_at_ms <= ? order by due_at_ms limit ${POLL_BATCH} for update skip locked)
    and w.id = r.webhook_id`;
/** Waiting retries of one webhook pulled forward by one catch-up. */
export const CATCH_UP_BATCH = 1000;

/** The Nats-Msg-Id of a republished retry: a republish after a crash is deduplicated by the stream. */
export const retryMsgId = (m: DeliveryMessage, attempt: number): string => `${m.subscriptionId}:${m.event.emitterId}:${m.event.id}:a${attempt}${m.heldBack ? `:h${m.heldBack}` : ''}`;

/**
 * The durable retry queue of webhook deliveries (`webhook_retries`). A failed
 * attempt's next attempt is written here and only then is the JetStream
 * message acked, so the DELIVERIES consumer never holds waiting retries and
 * its pending count stays bounded. A poller republishes due rows into
 * DELIVERIES (row locks with `skip locked`: several delivery replicas share
 * the work) and deletes them once the stream stored them.
 */
export class RetryQueue {
  private readonly writer = new BatchWriter<WaitingRetry>((rows) => this.upsert(rows), { maxItems: MAX_ROWS, lingerMs: LINGER_MS });
  /**
   * Parked deliveries have a writer of their own: an account past its room parks thousands a second, again each
   * time they come due, and a failed attempt's retry (which holds its webhook's slot until written) waited behind
   * them in one writer. Both write in key order, so the two cannot deadlock on a row.
   */
  private readonly parks = new BatchWriter<WaitingRetry>((rows) => this.upsert(rows), { maxItems: MAX_ROWS, lingerMs: LINGER_MS });
  private readonly poller = new DuePoller(() => this.poll(), (e) => this.logger.warn({ err: e.message }, 'republishing due webhook retries failed'));

  constructor(private readonly em: EntityManager, private readonly nats: NatsService, private readonly logger: Logger) {}

  /** Resolves once the retry is committed (the caller acks after it). One waiting retry per event and webhook: a later attempt replaces an earlier one. */
  enqueue(row: WaitingRetry): Promise<void> {
    return this.writer.add(row);
  }

  /**
   * Parks a delivery (a DELIVERIES message, or an event the router handed over) the sender does not hold now, as the same attempt, to be republished at `dueAtMs`
   * (the caller acks it once this resolves): a nak, even with a delay, would keep it among the consumer's
   * max_ack_pending, and JetStream hands out nothing new while those are full.
   */
  holdBack(message: DeliveryMessage, dueAtMs: number, ownerId: string | undefined): Promise<void> {
    return this.parks.add({ attempt: message.attempt ?? 1, dueAtMs, ownerId, message: { ...message, heldBack: (message.heldBack ?? 0) + 1 } });
  }

  private async upsert(rows: WaitingRetry[]): Promise<void> {
    // One row per key in a statement (on conflict cannot touch a row twice): the highest attempt wins.
    const byKey = new Map<string, WaitingRetry>();
    for (const row of rows) {
      const key = `${row.message.webhookId}|${row.message.event.emitterId}|${row.message.event.id}`;
      const seen = byKey.get(key);
      if (!seen || seen.attempt <= row.attempt) byKey.set(key, row);
    }
    const params: unknown[] = [];
    const now = Date.now();
    // Sorted so that replicas writing the same keys cannot deadlock.
    const values = [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => {
      // A json column keeps the text as written: each attempt's body is the emitted JSON byte for byte.
      const hook = r.message.webhookId;
      params.push(newId('retry'), hook, r.ownerId ?? null, hook, r.message.event.emitterId, r.message.event.id, r.attempt, r.dueAtMs, JSON.stringify(r.message), now);
      return `(?, ?, coalesce(?::varchar, (select owner_id from webhooks where id = ?), ''), ?, ?, ?, ?, ?::json, ?)`;
    });
    await this.em.fork().getConnection().execute(
      `insert into webhook_retries (id, webhook_id, owner_id, emitter_id, event_id, attempt, due_at_ms, message, created_at_ms) values ${values.join(', ')}
       on conflict (webhook_id, emitter_id, event_id) do update set owner_id = excluded.owner_id, attempt = excluded.attempt, due_at_ms = excluded.due_at_ms, message = excluded.message
       where webhook_retries.attempt <= excluded.attempt`,
      params,
      'run',
    );
  }

  /** Starts the poller that republishes due retries. */
  start(): void {
    this.poller.start();
  }

  async stop(): Promise<void> {
    await this.poller.stop();
    await Promise.all([this.writer.idle(), this.parks.idle()]);
  }

  /** Polls soon (a catch-up made retries due now). */
  wake(): void {
    this.poller.wake();
  }

  /** Republishes one batch of due retries, each account its share (DUE_FAIRLY); returns the wait before the next poll. */
  private async poll(): Promise<number> {
    const names = this.nats.names;
    const found = await inTransaction(this.em, async (tx) => {
      const now = Date.now();
      await tx.execute(FILL_OWNERS, [now], 'run');
      const rows = (await tx.execute(DUE_FAIRLY, [now, now])) as { id: string; attempt: number; message: DeliveryMessage }[];
      if (!rows.length) return false;
      await Promise.all(rows.map((r) => {
        const msg: DeliveryMessage = { ...fromExactJson<DeliveryMessage>(r.message), attempt: r.attempt };
        return this.nats.streams.publish(names.delivery(msg.webhookId), encodeJson(msg), retryMsgId(msg, r.attempt));
      }));
      await tx.execute(`delete from webhook_retries where id in (${rows.map(() => '?').join(', ')})`, rows.map((r) => r.id), 'run');
      // An account may have more due than its share: the next poll takes them.
      return true;
    });
    return found ? 0 : untilDue(this.em, 'webhook_retries');
  }

  /**
   * Pulls a webhook's waiting retries forward to now (the earliest
   * CATCH_UP_BATCH of them), after a success showed its endpoint is back.
   * Returns how many were pulled, or -1 while rows of the webhook are still
   * due (the previous batch is not republished yet).
   */
  async catchUp(webhookId: string): Promise<number> {
    const now = Date.now();
    const conn = this.em.fork().getConnection();
    const due = (await conn.execute(`select 1 from webhook_retries where webhook_id = ? and due_at_ms <= ? limit 1`, [webhookId, now])) as unknown[];
    if (due.length) return -1;
    const res = (await conn.execute(
      `update webhook_retries set due_at_ms = ? where id in (
         select id from webhook_retries where webhook_id = ? and due_at_ms > ? order by due_at_ms limit ${CATCH_UP_BATCH} for update skip locked)`,
      [now, webhookId, now],
      'run',
    )) as { affectedRows?: number };
    const n = res.affectedRows ?? 0;
    if (n > 0) this.wake();
    return n;
  }

  /** Every replica's waiting retries (one table): how many, and when the oldest of them first failed. */
  async waiting(): Promise<{ count: number; oldestSinceMs: number | null }> {
    const [row] = (await this.em.fork().getConnection().execute(`select count(*)::int as count, min(created_at_ms)::bigint as oldest from webhook_retries`, [])) as { count: number; oldest: string | null }[];
    return { count: row?.count ?? 0, oldestSinceMs: row?.oldest == null ? null : Number(row.oldest) };
  }

  /** Removes a webhook's waiting retries (it was disabled or deleted). */
  async drop(webhookId: string): Promise<void> {
    await this.em.fork().getConnection().execute(`delete from webhook_retries where webhook_id = ?`, [webhookId], 'run');
  }
}
