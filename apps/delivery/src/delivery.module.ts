import { DynamicModule, Module } from '@nestjs/common';
import { AppConfig, ConfigModule } from '@app/config';
import { DbModule } from '@app/db';
import { NatsModule } from '@app/nats';
import { Registry } from 'prom-client';
import { DeliveryMetrics } from './common/metrics';
import { loggerProvider } from './common/tokens';
import { IndexerService } from './indexer/indexer.service';
import { RouterService } from './router/router.service';
import { SubscriptionCache } from './router/subscription-cache';
import { SendsService } from './sends/sends.service';
import { UsageService } from './usage/usage.service';
import { WebhookSenderService } from './webhooks-out/webhook-sender.service';

@Module({})
export class DeliveryModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: DeliveryModule,
      providers: [
        { provide: Registry, useFactory: () => new Registry() },
        loggerProvider,
        DeliveryMetrics,
        SubscriptionCache,
        IndexerService,
        RouterService,
        WebhookSenderService,
        UsageService,
        SendsService,
      ],
      exports: [Registry, SubscriptionCache],
      imports: [ConfigModule.forRoot(config), DbModule.forRoot(config), NatsModule.forRoot('delivery', { manageStreams: false })],
    };
  }
}
