import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { createLogger, loadConfigOrExit, PinoNestLogger, startOpsServer } from '@app/config';
import { DeliveryModule } from './delivery.module';
import { SubscriptionCache } from './router/subscription-cache';
import { WebhookSenderService } from './webhooks-out/webhook-sender.service';

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const app = await NestFactory.createApplicationContext(DeliveryModule.forRoot(config), {
    logger: new PinoNestLogger(createLogger('delivery', config.logLevel)),
  });
  app.enableShutdownHooks();
  const cache = app.get(SubscriptionCache);
  const sender = app.get(WebhookSenderService);
  const registry = app.get(Registry) as Registry;
  collectDefaultMetrics({ register: registry, prefix: 'delivery_' });
  // A taken metrics port ends the start: release what the app holds (leases, NATS) first.
  const ops = await startOpsServer(config.deliveryMetricsPort, registry, () => ({ subscriptions: cache.subscriptionCount, webhooks: sender.stats() }), 'DELIVERY_METRICS_PORT').catch(async (e: Error) => {
    await app.close();
    throw e;
  });
  process.on('SIGTERM', () => ops?.close());
  process.stderr.write('delivery started\n');
}

main().catch((e: Error) => {
  process.stderr.write(`delivery failed to start: ${e.message}\n`);
  process.exit(1);
});
