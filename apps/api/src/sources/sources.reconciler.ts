import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { NatsService } from '@app/nats';
import { holdKvLease } from '../common/kv-lease';
import { SourcePublisher } from './source-publisher';

const LEASE_KEY = 'api.reconciler';
const BATCH = 200;

/**
 * Keeps NATS KV `sources` in line with Postgres: republishes sources whose
 * `publishedRev` lags `rev` and finishes interrupted deletes. One api replica
 * works at a time (a lease in KV `leases`); the others stand by.
 */
@Injectable()
export class SourcesReconciler implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('SourcesReconciler');
  private readonly replicaId = `api-${process.pid}-${randomBytes(4).toString('hex')}`;
  private timer?: NodeJS.Timeout;
  private running = false;
  private stopped = false;

  constructor(
    private readonly em: EntityManager,
    private readonly nats: NatsService,
    private readonly publisher: SourcePublisher,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.tick(), this.config.reconcileIntervalMs);
    this.timer.unref();
    void this.tick();
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
  }

  /** One pass; returns how many sources were handled. */
  async tick(): Promise<number> {
    if (this.running || this.stopped) return 0;
    this.running = true;
    try {
      if (!(await holdKvLease(this.nats.leases, LEASE_KEY, this.replicaId))) return 0;
      const rows: { id: string }[] = await this.em
        .fork()
        .getConnection()
        .execute(`select id from sources where published_rev < rev or deleted_at is not null order by updated_at asc limit ${BATCH}`);
      for (const { id } of rows) {
        if (this.stopped) break;
        try {
          await this.publisher.publish(id);
        } catch (e) {
          this.logger.warn(`reconcile failed source_id=${id} err=${(e as Error).message}`);
        }
      }
      if (rows.length) this.logger.log(`reconciled ${rows.length} source(s)`);
      return rows.length;
    } catch (e) {
      if (!this.stopped) this.logger.warn(`reconciler pass failed: ${(e as Error).message}`);
      return 0;
    } finally {
      this.running = false;
    }
  }
}
