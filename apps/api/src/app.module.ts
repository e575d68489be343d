import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR } from '@nestjs/core';
import { AppConfig, ConfigModule } from '@app/config';
import { DbModule } from '@app/db';
import { NatsModule } from '@app/nats';
import { AuthModule } from './auth/auth.module';
import { ShutdownState } from './common/shutdown-answer';
import { ErrorFilter } from './common/error.filter';
import { FieldFilterInterceptor } from './common/field-filter.interceptor';
import { AccountsModule } from './accounts/accounts.module';
import { ComponentsModule } from './components/components.module';
import { SourcesModule } from './sources/sources.module';
import { HttpEndpointsModule } from './http-endpoints/http-endpoints.module';
import { AppHooksModule } from './app-hooks/app-hooks.module';
import { EventsModule } from './events/events.module';
import { SubscriptionsModule } from './subscriptions/subscriptions.module';
import { WebhooksModule } from './webhooks/webhooks.module';
import { SseModule } from './sse/sse.module';
import { WorkflowsModule } from './workflows/workflows.module';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';
import { ContractInterceptor } from './contract/contract.interceptor';
import { OpenApiController } from './contract/openapi.controller';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        DbModule.forRoot(config, { requestContext: false, requestBounds: true }),
        NatsModule.forRoot('api', { manageStreams: true }),
        AuthModule,
        AccountsModule,
        ComponentsModule,
        SourcesModule,
        HttpEndpointsModule,
        AppHooksModule,
        EventsModule,
        SubscriptionsModule,
        WebhooksModule,
        SseModule,
        WorkflowsModule,
      ],
      controllers: [HealthController, MetricsController, OpenApiController],
      providers: [
        ShutdownState,
        { provide: APP_FILTER, useClass: ErrorFilter },
        { provide: APP_INTERCEPTOR, useClass: ContractInterceptor },
        { provide: APP_INTERCEPTOR, useClass: FieldFilterInterceptor },
      ],
    };
  }
}
