import { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '@app/contracts';

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
  private pending: { row: AttemptRecord; at: number; done: (e?: Error) => void }[] = [];
  private timer?: NodeJS.Timeout;
  private flushing = Promise.resolve();

  constructor(private readonly em: EntityManager) {}

  record(row: AttemptRecord): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ row, at: Date.now(), done: (e) => (e ? reject(e) : resolve()) });
      if (this.pending.length >= MAX_ROWS) this.schedule(0);
      else this.schedule(LINGER_MS);
    });
  }

  private schedule(ms: number): void {
    if (this.timer && ms > 0) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flushing = this.flushing.then(() => this.flush());
    }, ms);
  }

  private async flush(): Promise<void> {
    const items = this.pending.splice(0, MAX_ROWS);
    if (!items.length) return;
    const params: unknown[] = [];
    const values = items.map(({ row: r, at }) => {
      params.push(newId('delivery'), r.webhookId, r.eventId, r.emitterId, r.attempt, r.status, r.responseCode ?? null, r.latencyMs ?? null, r.responseBody ?? null, r.error ?? null, r.nextAttemptAtMs ?? null, at);
      return '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';
    });
    try {
      await this.em.fork().getConnection().execute(`insert into webhook_deliveries (${COLUMNS}) values ${values.join(', ')}`, params, 'run');
      for (const i of items) i.done();
    } catch (e) {
      for (const i of items) i.done(e as Error);
    }
    if (this.pending.length) this.schedule(0);
  }

  /** Deletes attempt rows older than `beforeMs`. */
  async prune(beforeMs: number): Promise<void> {
    await this.em.fork().getConnection().execute(`delete from webhook_deliveries where created_at_ms < ?`, [beforeMs], 'run');
  }

  /** Attempts already made for an event (after a redelivery). */
  async attemptsSoFar(webhookId: string, emitterId: string, eventId: string): Promise<number> {
    const [row] = (await this.em.fork().getConnection().execute(
      `select coalesce(max(attempt), 0)::int as n from webhook_deliveries where webhook_id = ? and event_id = ? and emitter_id = ?`,
      [webhookId, eventId, emitterId],
    )) as { n: number }[];
    return row?.n ?? 0;
  }
}
