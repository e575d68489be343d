import { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '@app/contracts';
import { BatchWriter } from '../common/batch-writer';
import { pgText } from '../common/pg-text';

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

const COLUMNS = 'id, webhook_id, event_id, emitter_id, attempt, status, response_code, latency_ms, response_body, error, next_attempt_at_ms, created_at_ms';
const MAX_ROWS = 200;
const LINGER_MS = 10;

/**
 * Records delivery attempts in `webhook_deliveries` with multi-row inserts.
 * `record` resolves once the row is committed, so callers ack after it is durable.
 */
export class DeliveryLog {
  private readonly writer = new BatchWriter<{ row: AttemptRecord; at: number }>((items) => this.insert(items), { maxItems: MAX_ROWS, lingerMs: LINGER_MS });

  constructor(private readonly em: EntityManager) {}

  record(row: AttemptRecord): Promise<void> {
    return this.writer.add({ row, at: Date.now() });
  }

  private async insert(items: { row: AttemptRecord; at: number }[]): Promise<void> {
    const params: unknown[] = [];
    const values = items.map(({ row: r, at }) => {
      params.push(newId('delivery'), r.webhookId, r.eventId, r.emitterId, r.attempt, r.status, r.responseCode ?? null, r.latencyMs ?? null, pgText(r.responseBody ?? null), pgText(r.error ?? null), r.nextAttemptAtMs ?? null, at);
      return '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';
    });
    await this.em.fork().getConnection().execute(`insert into webhook_deliveries (${COLUMNS}) values ${values.join(', ')}`, params, 'run');
  }

  /** Deletes attempt rows older than `beforeMs`. */
  async prune(beforeMs: number): Promise<void> {
    await this.em.fork().getConnection().execute(`delete from webhook_deliveries where created_at_ms < ?`, [beforeMs], 'run');
  }

  /** Attempts already made for an event (after a redelivery), and whether one of them succeeded. */
  async attemptsSoFar(webhookId: string, emitterId: string, eventId: string): Promise<{ attempts: number; succeeded: boolean }> {
    const [row] = (await this.em.fork().getConnection().execute(
      `select coalesce(max(attempt), 0)::int as n, coalesce(bool_or(status = 'succeeded'), false) as ok from webhook_deliveries where webhook_id = ? and event_id = ? and emitter_id = ?`,
      [webhookId, eventId, emitterId],
    )) as { n: number; ok: boolean }[];
    return { attempts: row?.n ?? 0, succeeded: row?.ok ?? false };
  }
}
