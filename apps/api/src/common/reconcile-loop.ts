import { randomBytes } from 'node:crypto';
import type { Logger } from '@nestjs/common';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { NatsService } from '@app/nats';
import { holdKvLease } from './kv-lease';

/** Rows republished per pass. */
const BATCH = 200;

export interface ReconcileLoopOptions {
  /** `sources` or `workflows`: rows whose `published_rev` lags `rev`, or whose delete is unfinished. */
  table: 'sources' | 'workflows';
  /** Key of the lease in KV `leases`: one api replica works at a time, the others stand by. */
  leaseKey: string;
  intervalMs: number;
  publish: (id: string) => Promise<void>;
  logger: Logger;
}

/**
 * Keeps NATS KV `sources` in line with Postgres for one kind of row: every
 * `intervalMs`, the replica holding the lease republishes the rows whose
 * published revision lags, oldest first, and finishes interrupted deletes.
 */
export class ReconcileLoop {
  private readonly replicaId = `api-${process.pid}-${randomBytes(4).toString('hex')}`;
  private timer?: NodeJS.Timeout;
  private running = false;
  private stopped = false;

  constructor(private readonly em: EntityManager, private readonly nats: NatsService, private readonly opts: ReconcileLoopOptions) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.opts.intervalMs);
    this.timer.unref();
    void this.tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
  }

  /** One pass; returns how many rows were handled. */
  async tick(): Promise<number> {
    const { table, logger } = this.opts;
    if (this.running || this.stopped) return 0;
    this.running = true;
    try {
      if (!(await holdKvLease(this.nats.leases, this.opts.leaseKey, this.replicaId))) return 0;
      const rows: { id: string }[] = await this.em
        .fork()
        .getConnection()
        .execute(`select id from ${table} where published_rev < rev or deleted_at is not null order by updated_at asc limit ${BATCH}`);
      for (const { id } of rows) {
        if (this.stopped) break;
        await this.opts.publish(id).catch((e: Error) => logger.warn(`reconcile failed ${table}.id=${id} err=${e.message}`));
      }
      if (rows.length) logger.log(`reconciled ${rows.length} of ${table}`);
      return rows.length;
    } catch (e) {
      if (!this.stopped) logger.warn(`${table} reconciler pass failed: ${(e as Error).message}`);
      return 0;
    } finally {
      this.running = false;
    }
  }
}
