import { DynamicModule, Module } from '@nestjs/common';
import { MikroOrmModule } from '@mikro-orm/nestjs';
import { AppConfig } from '@app/config';
import { ormOptions } from './orm.config';

/** MikroORM for an app (its EntityManager is global); the database must already be migrated (`npm run migrate`). */
@Module({})
export class DbModule {
  /**
   * `requestContext: false` leaves the per-request EntityManager context to the
   * app (the api registers it for every route but the public `/e/*` ingress,
   * which forks its own only on a cache miss).
   */
  static forRoot(config: AppConfig, { requestContext = true }: { requestContext?: boolean } = {}): DynamicModule {
    if (!config.databaseUrl) throw new Error('DATABASE_URL is not set (npm start resolves one; set it when starting an app alone)');
    return {
      module: DbModule,
      imports: [MikroOrmModule.forRoot({ ...ormOptions(config.databaseUrl), registerRequestContext: requestContext })],
    };
  }
}
