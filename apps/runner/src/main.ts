import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Registry } from 'prom-client';
import { closeOnStopSignals, createLogger, loadConfigOrExit, PinoNestLogger, serveAppOps } from '@app/config';
import { RunnerModule } from './runner.module';
import { RunnerService } from './runner.service';

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const app = await NestFactory.createApplicationContext(RunnerModule.forRoot(config), {
    logger: new PinoNestLogger(createLogger('runner', config.logLevel)),
  });
  closeOnStopSignals(app);
  const runner = app.get(RunnerService);
  await serveAppOps(app, { port: config.runnerMetricsPort, setting: 'RUNNER_METRICS_PORT', prefix: 'runner_', registry: app.get(Registry), healthy: () => runner.health() });
  process.stderr.write(`runner started (replica ${runner.replicaId}); isolation: ${runner.isolationSummary}\n`);
}

main().catch((e: Error) => {
  process.stderr.write(`runner failed to start: ${e.message}\n`);
  process.exit(1);
});
