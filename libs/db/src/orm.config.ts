import { Options, ReflectMetadataProvider, UnderscoreNamingStrategy } from '@mikro-orm/core';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import { PostgresDriver } from './postgres-driver';
import { Migrator } from '@mikro-orm/migrations';
import { ENTITIES } from './entities';
import { MIGRATIONS } from './migrations';

/** How an app uses its connection pool (DB_POOL_MAX, DB_POOL_ACQUIRE_TIMEOUT_MS, DB_STATEMENT_TIMEOUT_MS). */
export interface PoolOptions {
  /** Connections the process keeps open at most. */
  max?: number;
  /** How long a query waits for a free connection before it fails (a 503 in the api). */
  acquireTimeoutMs?: number;
  /** Postgres `statement_timeout` of the pool's connections (0: none). */
  statementTimeoutMs?: number;
  /** Where the pool's own warnings go (a dropped connection), instead of knex's console lines. */
  warn?: (message: string) => void;
}

/** MikroORM options for a Postgres URL; migrations are listed in code so the build carries them. */
export function ormOptions(databaseUrl: string, debug = false, pool: PoolOptions = {}): Options<PostgreSqlDriver> {
  const warn = pool.warn;
  return {
    driver: PostgresDriver,
    clientUrl: databaseUrl,
    entities: ENTITIES,
    metadataProvider: ReflectMetadataProvider,
    namingStrategy: UnderscoreNamingStrategy,
    discovery: { disableDynamicFileAccess: true },
    extensions: [Migrator],
    migrations: {
      migrationsList: MIGRATIONS,
      transactional: true,
      allOrNothing: true,
      tableName: 'mikro_orm_migrations',
      silent: true,
    },
    pool: { min: 0, max: pool.max ?? 10 },
    driverOptions: {
      // knex's default is 60 s: a request would wait that long for a connection of a saturated pool.
      acquireConnectionTimeout: pool.acquireTimeoutMs ?? 60_000,
      ...(pool.statementTimeoutMs ? { connection: { statement_timeout: pool.statementTimeoutMs } } : {}),
      ...(warn ? { log: { warn, error: warn, deprecate: warn, debug: () => undefined } } : {}),
    },
    debug,
    allowGlobalContext: false,
  };
}
