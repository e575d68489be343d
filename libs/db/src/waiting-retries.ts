import { EntityManager } from '@mikro-orm/postgresql';

/**
 * The deliveries waiting in `webhook_retries` per owner of their webhooks, counted every `intervalMs`, or 20 times
 * as long as the last count took if that is longer. While the whole table holds fewer than `atLeast` rows no owner can
 * reach that many, and a count that stops there says so; past it, a count over the whole table (an index-only scan,
 * about 0.8 s of Postgres time per million rows). Postgres unreachable for a moment, the figures stay as last counted.
 * The api refuses an account's HTTP endpoints past INGEST_MAX_RETRIES_PER_ACCOUNT, the delivery app gives up an
 * account's failed attempts past WEBHOOK_MAX_RETRIES_PER_ACCOUNT.
 */
export class WaitingRetries {
  /**
   * Waiting retries in all, as last counted (past `atLeast`, those of active webhooks: a disabled or deleted webhook's
   * retries are deleted with it, and an attempt in flight then may still write one, dropped unsent when it comes due).
   */
  total = 0;
  private byOwner = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly em: EntityManager,
    private readonly atLeast: number,
    private readonly intervalMs: number,
    private readonly warn: (message: string) => void,
  ) {}

  /** Waiting retries of the owner's webhooks, as last counted (0 while the table holds fewer than `atLeast`). */
  of(ownerId: string): number {
    return this.byOwner.get(ownerId) ?? 0;
  }

  start(): void {
    this.later(0);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private later(ms: number): void {
    this.timer = setTimeout(() => {
      const started = Date.now();
      void this.count().finally(() => {
        if (!this.stopped) this.later(Math.max(this.intervalMs, 20 * (Date.now() - started)));
      });
    }, ms);
    this.timer.unref();
  }

  /** Counts once. */
  async count(): Promise<void> {
    const conn = this.em.fork().getConnection();
    try {
      const [{ n: few }] = (await conn.execute(`select count(*)::int as n from (select 1 from webhook_retries limit ${this.atLeast}) x`, [])) as { n: number }[];
      if (few < this.atLeast) {
        this.total = few;
        this.byOwner = new Map();
        return;
      }
      const rows = (await conn.execute(
        `select w.owner_id, r.n from (select webhook_id, count(*)::int as n from webhook_retries group by webhook_id) r join webhooks w on w.id = r.webhook_id and w.active`,
        [],
      )) as { owner_id: string; n: number }[];
      const byOwner = new Map<string, number>();
      for (const { owner_id: owner, n } of rows) byOwner.set(owner, (byOwner.get(owner) ?? 0) + n);
      this.byOwner = byOwner;
      this.total = rows.reduce((sum, r) => sum + r.n, 0);
    } catch (e) {
      this.warn(`counting the waiting webhook retries failed: ${(e as Error).message}`);
    }
  }
}
