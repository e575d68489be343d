import { DynamicModule, Module } from '@nestjs/common';
import { AppConfig, ConfigModule, createLogger } from '@app/config';
import { NatsModule } from '@app/nats';
import { Registry } from 'prom-client';
import { EXECUTOR } from './executor/executor.port';
import { SandboxExecutor } from './executor/sandbox-executor';
import { EMIT_BUDGETS, type EmitBudgets, emitBudgetsOf, owedMs } from './ops/emit-budget';
import { RunnerService } from './runner.service';

@Module({})
export class RunnerModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: RunnerModule,
      providers: [
        { provide: Registry, useFactory: () => new Registry() },
        { provide: EMIT_BUDGETS, useFactory: () => emitBudgetsOf(config) },
        // An account's answers are not read while its events wait for its budgets: they wait in its own sandbox.
        {
          provide: EXECUTOR,
          useFactory: (budgets: EmitBudgets, registry: Registry) => SandboxExecutor.create(config, createLogger('runner', config.logLevel), (account) => owedMs(budgets, account), registry),
          inject: [EMIT_BUDGETS, Registry],
        },
        RunnerService,
      ],
      exports: [Registry],
      imports: [ConfigModule.forRoot(config), NatsModule.forRoot('runner', { manageStreams: false })],
    };
  }
}
