import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { NatsService } from '@app/nats';
import { ReconcileLoop } from '../common/reconcile-loop';
import { SourcePublisher } from './source-publisher';

/**
 * Keeps NATS KV `sources` in line with Postgres: republishes sources whose
 * `publishedRev` lags `rev` and finishes interrupted deletes. One api replica
 * works at a time (a lease in KV `leases`); the others stand by.
 */
@Injectable()
export class SourcesReconciler implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly loop: ReconcileLoop;

  constructor(em: EntityManager, nats: NatsService, publisher: SourcePublisher, @Inject(APP_CONFIG) config: AppConfig) {
    this.loop = new ReconcileLoop(em, nats, { table: 'sources', leaseKey: 'api.reconciler', intervalMs: config.reconcileIntervalMs, publish: (id) => publisher.publish(id), logger: new Logger('SourcesReconciler') });
  }

  onApplicationBootstrap(): void {
    this.loop.start();
  }

  onApplicationShutdown(): void {
    this.loop.stop();
  }

  /** One pass; returns how many sources were handled. */
  tick(): Promise<number> {
    return this.loop.tick();
  }
}
