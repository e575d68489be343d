import { Options, ReflectMetadataProvider, UnderscoreNamingStrategy } from '@mikro-orm/core';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { ENTITIES } from './entities';
import { MIGRATIONS } from './migrations';

/** MikroORM options for a Postgres URL; migrations are listed in code so the build carries them. */
export function ormOptions(databaseUrl: string, debug = false): Options<PostgreSqlDriver> {
  return {
    driver: PostgreSqlDriver,
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
    pool: { min: 0, max: 10 },
    debug,
    allowGlobalContext: false,
  };
}
