import { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '@app/contracts';
import { BatchWriter } from '../common/batch-writer';
import { pgText } from '../common/pg-text';
import { insertRows, RowColumn } from '../common/pg-rows';

export type AttemptStatus = 'succeeded' | 'failed' | 'exhausted' | 'disabled';

export interface AttemptRecord {
  webhookId: string;
  eventId: string;
  emitterId: string;
  attempt: number;
  status: AttemptStatus;
  responseCode?: number;
  latencyMs?: number;
  responseBody?: string;
  error?: string;
  nextAttemptAtMs?: number;
}

const COLUMNS: RowColumn[] = [
  { name: 'id', type: 'text' },
  { name: 'webhook_id', type: 'text' },
  { name: 'event_id', type: 'text' },
  { name: 'emitter_id', type: 'text' },
  { name: 'attempt', type: 'int4' },
  { name: 'status', type: 'text' },
  { name: 'response_code', type: 'int4' },
  { name: 'latency_ms', type: 'int4' },
  { name: 'response_body', type: 'text' },
  { name: 'error', type: 'text' },
  { name: 'next_attempt_at_ms', type: 'int8' },
  { name: 'created_at_ms', type: 'int8' },
];
/**
 * An event's attempts at a webhook (parameters: webhook id, event id, emitter id), asked for every redelivered
 * delivery: answered by the (webhook_id, event_id) index, not by reading the webhook's whole log.
 */
export const ATTEMPTS_SO_FAR_SQL = `select coalesce(max(attempt), 0)::int as n, coalesce(bool_or(status = 'succeeded'), false) as ok from webhook_deliveries where webhook_id = ? and event_id = ? and emitter_id = ?`;
const MAX_ROWS = 200;
const LINGER_MS = 10;
/** Successful attempts wait longer for company: nothing waits for their rows. */
const SUCCESS_MAX_ROWS = 1000;
const SUCCESS_LINGER_MS = 50;

type Pending = { row: AttemptRecord; at: number };

/**
 * Records delivery attempts in `webhook_deliveries` with multi-row inserts. `record` resolves once the row is
 * committed: a failed, exhausted or disabled attempt's row is flushed to disk before the caller acts on it (queues
 * the retry, terminates the message). A successful attempt's message is acknowledged before its row is written
 * (the row is the log users read, and what a redelivery of an event whose acknowledgement was lost is checked
 * against): successes are written in larger batches, and with `asyncCommit` (DELIVERY_LOG_ASYNC_COMMIT) without
 * waiting for their flush, so a Postgres crash can lose the rows of its last moments.
 */
export class DeliveryLog {
  private readonly writer = new BatchWriter<Pending>((items) => this.insert(items, false), { maxItems: MAX_ROWS, lingerMs: LINGER_MS });
  private readonly successes = new BatchWriter<Pending>((items) => this.insert(items, this.asyncCommit), { maxItems: SUCCESS_MAX_ROWS, lingerMs: SUCCESS_LINGER_MS });

  constructor(private readonly em: EntityManager, private readonly asyncCommit = false) {}

  record(row: AttemptRecord): Promise<void> {
    return (row.status === 'succeeded' ? this.successes : this.writer).add({ row, at: Date.now() });
  }

  /** Writes what is waiting now; resolves when it is written (shutdown). */
  async flush(): Promise<void> {
    await Promise.all([this.writer.flushNow(), this.successes.flushNow()]);
  }

  private async insert(items: Pending[], asyncCommit: boolean): Promise<void> {
    const rows = items.map(({ row: r, at }) => [newId('delivery'), r.webhookId, r.eventId, r.emitterId, r.attempt, r.status, r.responseCode ?? null, r.latencyMs ?? null, pgText(r.responseBody ?? null), pgText(r.error ?? null), r.nextAttemptAtMs ?? null, at]);
    await insertRows(this.em, 'webhook_deliveries', COLUMNS, rows, '', asyncCommit);
  }

  /**
   * Deletes attempt rows older than `beforeMs`, and of each webhook all but its newest `keepPerWebhook` (0: no count
   * bound), webhook by webhook through the (webhook_id, created_at_ms) index: the webhooks that have rows are listed by
   * one index probe each (a loose index scan). A plain `created_at_ms < ?` read the whole table or index every ten
   * minutes (84–700 ms at a million rows; 8 ms this way, with 200 webhooks). Without the count bound one account's
   * webhooks kept every attempt of 7 days: at the thousands of deliveries a second one delivery replica makes, about a
   * billion rows of the shared Postgres.
   */
  async prune(beforeMs: number, keepPerWebhook = 0): Promise<void> {
    await this.em.getConnection().execute(
      `with recursive hooks(id) as (
         (select webhook_id from webhook_deliveries order by webhook_id limit 1)
         union all
         select (select d.webhook_id from webhook_deliveries d where d.webhook_id > hooks.id order by d.webhook_id limit 1) from hooks where hooks.id is not null
       ),
       cuts as (
         select hooks.id, c.created_at_ms as at_ms, c.id as at_id
         from hooks left join lateral (
           select d.created_at_ms, d.id from webhook_deliveries d where ?::int > 0 and d.webhook_id = hooks.id
           order by d.created_at_ms desc, d.id desc offset greatest(?::int, 0) limit 1
         ) c on true
         where hooks.id is not null
       )
       delete from webhook_deliveries d using cuts
       where d.webhook_id = cuts.id and (d.created_at_ms < ? or (cuts.at_ms is not null and (d.created_at_ms, d.id) <= (cuts.at_ms, cuts.at_id)))`,
      [keepPerWebhook, keepPerWebhook, beforeMs],
      'run',
    );
  }

  /** Attempts already made for an event (after a redelivery), and whether one of them succeeded. */
  async attemptsSoFar(webhookId: string, emitterId: string, eventId: string): Promise<{ attempts: number; succeeded: boolean }> {
    const [row] = (await this.em.getConnection().execute(ATTEMPTS_SO_FAR_SQL, [webhookId, eventId, emitterId])) as { n: number; ok: boolean }[];
    return { attempts: row?.n ?? 0, succeeded: row?.ok ?? false };
  }
}
