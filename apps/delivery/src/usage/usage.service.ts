import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { JsMsg } from 'nats';
import { APP_CONFIG, AppConfig, Logger } from '@app/config';
import { decodeJson, UsageRecord } from '@app/contracts';
import { NatsService } from '@app/nats';
import { BatchConsumer, ensureDurable } from '../common/durable-consumer';
import { DeliveryMetrics } from '../common/metrics';
import { LOGGER } from '../common/tokens';

const DURABLE = 'usage';

/** Aggregates finished invocations (stream USAGE) into `usage_daily` per owner and UTC day. */
@Injectable()
export class UsageService implements OnApplicationBootstrap, OnApplicationShutdown {
  private consumer?: BatchConsumer;

  constructor(private readonly nats: NatsService, private readonly em: EntityManager, private readonly metrics: DeliveryMetrics, @Inject(APP_CONFIG) private readonly config: AppConfig, @Inject(LOGGER) private readonly logger: Logger) {}

  async onApplicationBootstrap(): Promise<void> {
    const names = this.nats.names;
    await ensureDurable(this.nats.jsm, names.usageStream, { durable_name: DURABLE, filter_subject: names.allUsage, max_ack_pending: 20_000, ack_wait: this.config.deliveryAckWaitMs * 1_000_000 });
    this.consumer = new BatchConsumer(this.nats.js, names.usageStream, DURABLE, (batch) => this.aggregate(batch), { maxBatch: 1000, lingerMs: 50 }, this.logger, this.config.deliveryAckWaitMs);
    await this.consumer.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.consumer?.stop();
  }

  private async aggregate(batch: JsMsg[]): Promise<void> {
    const totals = new Map<string, { ownerId: string; day: string; invocations: number; computeMs: number }>();
    const good: JsMsg[] = [];
    for (const m of batch) {
      let r: UsageRecord;
      try {
        r = decodeJson<UsageRecord>(m.data);
        if (typeof r.ownerId !== 'string' || !Number.isFinite(r.finishedAtMs)) throw new Error('bad record');
      } catch {
        m.term('malformed usage record');
        continue;
      }
      const day = new Date(r.finishedAtMs).toISOString().slice(0, 10);
      const key = `${r.ownerId}|${day}`;
      const t = totals.get(key) ?? { ownerId: r.ownerId, day, invocations: 0, computeMs: 0 };
      t.invocations += 1;
      t.computeMs += Math.max(0, Math.round(r.computeMs || 0));
      totals.set(key, t);
      good.push(m);
    }
    if (totals.size) {
      const params: unknown[] = [];
      const values = [...totals.values()].map((t) => {
        params.push(t.ownerId, t.day, t.invocations, t.computeMs);
        return '(?, ?, ?, ?)';
      });
      await this.em.fork().getConnection().execute(
        `insert into usage_daily (owner_id, day, invocations, compute_ms) values ${values.join(', ')}
         on conflict (owner_id, day) do update set invocations = usage_daily.invocations + excluded.invocations, compute_ms = usage_daily.compute_ms + excluded.compute_ms`,
        params,
        'run',
      );
    }
    for (const m of good) m.ack();
    this.metrics.usageRecords.inc(good.length);
  }
}
