import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Registry } from 'prom-client';
import { closeOnStopSignals, createLogger, loadConfigOrExit, PinoNestLogger, serveAppOps } from '@app/config';
import { DeliveryModule } from './delivery.module';
import { SubscriptionCache } from './router/subscription-cache';
import { WebhookSenderService } from './webhooks-out/webhook-sender.service';

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const app = await NestFactory.createApplicationContext(DeliveryModule.forRoot(config), {
    logger: new PinoNestLogger(createLogger('delivery', config.logLevel)),
  });
  closeOnStopSignals(app);
  const cache = app.get(SubscriptionCache);
  const sender = app.get(WebhookSenderService);
  await serveAppOps(app, {
    port: config.deliveryMetricsPort,
    setting: 'DELIVERY_METRICS_PORT',
    prefix: 'delivery_',
    registry: app.get(Registry),
    healthy: () => ({ subscriptions: cache.subscriptionCount, webhooks: sender.stats() }),
  });
  process.stderr.write('delivery started\n');
}

main().catch((e: Error) => {
  process.stderr.write(`delivery failed to start: ${e.message}\n`);
  process.exit(1);
});
