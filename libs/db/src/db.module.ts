import { DynamicModule, Logger, Module } from '@nestjs/common';
import { MikroOrmModule } from '@mikro-orm/nestjs';
import { AppConfig } from '@app/config';
import { ormOptions } from './orm.config';

/** MikroORM for an app (its EntityManager is global); the database must already be migrated (`npm run migrate`). */
@Module({})
export class DbModule {
  /**
   * `requestContext: false` leaves the per-request EntityManager context to the
   * app (the api registers it for every route but the public `/e/*` ingress,
   * which forks its own only on a cache miss). `requestBounds`: a query waits at
   * most DB_POOL_ACQUIRE_TIMEOUT_MS for a connection and runs at most
   * DB_STATEMENT_TIMEOUT_MS (the api, whose queries a client is waiting for;
   * the delivery app's batches rather wait than fail).
   */
  static forRoot(config: AppConfig, { requestContext = true, requestBounds = false }: { requestContext?: boolean; requestBounds?: boolean } = {}): DynamicModule {
    if (!config.databaseUrl) throw new Error('DATABASE_URL is not set (npm start resolves one; set it when starting an app alone)');
    const logger = new Logger('Postgres');
    const pool = {
      max: config.dbPoolMax,
      acquireTimeoutMs: requestBounds ? config.dbPoolAcquireTimeoutMs : undefined,
      statementTimeoutMs: requestBounds ? config.dbStatementTimeoutMs : 0,
      warn: (message: string) => logger.warn(message),
    };
    return {
      module: DbModule,
      // ensureDatabase off: the database is created and migrated before any app starts (`npm run migrate`, npm start),
      // and MikroORM's check ran the app's first query under DB_POOL_ACQUIRE_TIMEOUT_MS: a first connection not opened
      // within it (100 ms, on a loaded machine) stopped the api at its start instead of answering 503 for a moment.
      imports: [MikroOrmModule.forRoot({ ...ormOptions(config.databaseUrl, false, pool), ensureDatabase: false, registerRequestContext: requestContext })],
    };
  }
}
