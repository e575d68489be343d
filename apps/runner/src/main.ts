import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { createLogger, loadConfigOrExit, PinoNestLogger, startOpsServer } from '@app/config';
import { RunnerModule } from './runner.module';
import { RunnerService } from './runner.service';

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const app = await NestFactory.createApplicationContext(RunnerModule.forRoot(config), {
    logger: new PinoNestLogger(createLogger('runner', config.logLevel)),
  });
  app.enableShutdownHooks();
  const registry = app.get(Registry) as Registry;
  collectDefaultMetrics({ register: registry, prefix: 'runner_' });
  const runner = app.get(RunnerService);
  // A taken metrics port ends the start: release what the app holds (leases, NATS) first.
  const ops = await startOpsServer(config.runnerMetricsPort, registry, () => runner.health(), 'RUNNER_METRICS_PORT').catch(async (e: Error) => {
    await app.close();
    throw e;
  });
  process.on('SIGTERM', () => ops?.close());
  process.stderr.write(`runner started (replica ${runner.replicaId}); isolation: ${runner.isolationSummary}\n`);
}

main().catch((e: Error) => {
  process.stderr.write(`runner failed to start: ${e.message}\n`);
  process.exit(1);
});
