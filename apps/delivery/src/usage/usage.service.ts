import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { JsMsg } from 'nats';
import { APP_CONFIG, AppConfig, Logger } from '@app/config';
import { decodeJson, UsageRecord } from '@app/contracts';
import { ensureDurable, NatsService } from '@app/nats';
import { BatchConsumer } from '../common/durable-consumer';
import { DeliveryMetrics } from '../common/metrics';
import { LOGGER } from '../common/tokens';
import { inTransaction } from '../common/transaction';

const DURABLE = 'usage';
/** How often `usage_seen` drops the records that can no longer be redelivered. */
const PRUNE_EVERY_MS = 5_000;

interface Counted {
  r: UsageRecord;
  key: string;
  /** The highest stream sequence carrying this key: the row lives until it leaves the queue. */
  seq: number;
}

/**
 * Aggregates finished invocations (stream USAGE) into `usage_daily` per owner
 * and UTC day, once per invocation: each record's invocation id goes into
 * `usage_seen` in the same transaction as the totals, so a record redelivered
 * after a crash between commit and ack (or published twice) is acked without
 * being counted again. A row is kept while its message may still come back,
 * that is while its stream sequence is at or above the work queue's first one.
 */
@Injectable()
export class UsageService implements OnApplicationBootstrap, OnApplicationShutdown {
  private consumer?: BatchConsumer;
  private pruner?: NodeJS.Timeout;

  constructor(private readonly nats: NatsService, private readonly em: EntityManager, private readonly metrics: DeliveryMetrics, @Inject(APP_CONFIG) private readonly config: AppConfig, @Inject(LOGGER) private readonly logger: Logger) {}

  async onApplicationBootstrap(): Promise<void> {
    const names = this.nats.names;
    await ensureDurable(this.nats.jsm, names.usageStream, { durable_name: DURABLE, filter_subject: names.allUsage, max_ack_pending: 20_000, ack_wait: this.config.deliveryAckWaitMs * 1_000_000 });
    this.consumer = new BatchConsumer(this.nats.js, names.usageStream, DURABLE, (batch) => this.aggregate(batch), { maxBatch: 1000, lingerMs: 50 }, this.logger, this.config.deliveryAckWaitMs);
    await this.consumer.start();
    this.pruner = setInterval(() => void this.prune().catch((e: Error) => this.logger.warn({ err: e.message }, 'pruning usage_seen failed')), PRUNE_EVERY_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.pruner);
    await this.consumer?.stop();
  }

  private async aggregate(batch: JsMsg[]): Promise<void> {
    const byKey = new Map<string, Counted>();
    const good: JsMsg[] = [];
    for (const m of batch) {
      let r: UsageRecord;
      try {
        r = decodeJson<UsageRecord>(m.data);
        if (typeof r.ownerId !== 'string' || !Number.isFinite(r.finishedAtMs)) throw new Error('bad record');
      } catch {
        m.term(); // malformed usage record
        continue;
      }
      good.push(m);
      const key = typeof r.invocationId === 'string' && r.invocationId ? r.invocationId : `seq:${m.seq}`;
      const seen = byKey.get(key);
      if (seen) seen.seq = Math.max(seen.seq, m.seq);
      else byKey.set(key, { r, key, seq: m.seq });
    }
    if (byKey.size) {
      await inTransaction(this.em, async (tx) => {
        // Rows are written in key order so that replicas sharing keys cannot deadlock.
        const items = [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
        const fresh = await this.markSeen(tx, items);
        await this.addTotals(tx, items.filter((c) => fresh.has(c.key)).map((c) => c.r));
      });
    }
    for (const m of good) m.ack();
    this.metrics.usageRecords.inc(good.length);
  }

  /**
   * Records the batch's keys (a key seen again keeps the highest sequence, so it
   * outlives every copy); returns those not seen before: only they are counted.
   */
  private async markSeen(tx: EntityManager, items: Counted[]): Promise<Set<string>> {
    const params: unknown[] = [];
    const now = Date.now();
    const values = items.map((c) => {
      params.push(c.key, c.seq, now);
      return '(?, ?, ?)';
    });
    const rows = (await tx.execute(
      `insert into usage_seen (invocation_id, stream_seq, created_at_ms) values ${values.join(', ')}
       on conflict (invocation_id) do update set stream_seq = greatest(usage_seen.stream_seq, excluded.stream_seq), created_at_ms = excluded.created_at_ms
       returning invocation_id, (xmax = 0) as inserted`,
      params,
    )) as { invocation_id: string; inserted: boolean }[];
    return new Set(rows.filter((r) => r.inserted).map((r) => r.invocation_id));
  }

  private async addTotals(tx: EntityManager, records: UsageRecord[]): Promise<void> {
    const totals = new Map<string, { ownerId: string; day: string; invocations: number; computeMs: number }>();
    for (const r of records) {
      const day = new Date(r.finishedAtMs).toISOString().slice(0, 10);
      const key = `${r.ownerId}|${day}`;
      const t = totals.get(key) ?? { ownerId: r.ownerId, day, invocations: 0, computeMs: 0 };
      t.invocations += Number.isInteger(r.invocations) && r.invocations! > 0 ? r.invocations! : 1;
      t.computeMs += Math.max(0, Math.round(r.computeMs || 0));
      totals.set(key, t);
    }
    if (!totals.size) return;
    const params: unknown[] = [];
    const values = [...totals.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, t]) => {
      params.push(t.ownerId, t.day, t.invocations, t.computeMs);
      return '(?, ?, ?, ?)';
    });
    await tx.execute(
      `insert into usage_daily (owner_id, day, invocations, compute_ms) values ${values.join(', ')}
       on conflict (owner_id, day) do update set invocations = usage_daily.invocations + excluded.invocations, compute_ms = usage_daily.compute_ms + excluded.compute_ms`,
      params,
      'run',
    );
  }

  /**
   * Drops the keys of messages that have left the USAGE work queue (acked or
   * aged out): below its first sequence nothing can be redelivered. Rows older
   * than the stream's maximum age go too (a stream recreated from sequence 1).
   */
  private async prune(): Promise<void> {
    const info = await this.nats.jsm.streams.info(this.nats.names.usageStream);
    const maxAgeMs = info.config.max_age ? info.config.max_age / 1_000_000 : 3 * 86_400_000;
    await this.em.fork().execute(
      `delete from usage_seen where stream_seq < ? or created_at_ms < ?`,
      [info.state.first_seq, Date.now() - maxAgeMs - this.config.deliveryAckWaitMs],
      'run',
    );
  }
}
