import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from './config';

export const APP_CONFIG = Symbol('APP_CONFIG');

/** Makes the validated config injectable as `@Inject(APP_CONFIG) config: AppConfig`. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: APP_CONFIG, useValue: config }], exports: [APP_CONFIG] };
  }
}
