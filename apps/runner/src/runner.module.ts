import { DynamicModule, Module } from '@nestjs/common';
import { AppConfig, ConfigModule, createLogger } from '@app/config';
import { NatsModule } from '@app/nats';
import { Registry } from 'prom-client';
import { EXECUTOR } from './executor/executor.port';
import { SandboxExecutor } from './executor/sandbox-executor';
import { RunnerService } from './runner.service';

@Module({})
export class RunnerModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: RunnerModule,
      providers: [
        { provide: Registry, useFactory: () => new Registry() },
        { provide: EXECUTOR, useFactory: () => SandboxExecutor.create(config, createLogger('runner', config.logLevel)) },
        RunnerService,
      ],
      exports: [Registry],
      imports: [ConfigModule.forRoot(config), NatsModule.forRoot('runner', { manageStreams: false })],
    };
  }
}
