import { Registry } from 'prom-client';
import { loadConfigOrExit, portInUse, serveAppOps } from '@app/config';
import { createApiApp } from './bootstrap';
import { COMPONENT_READER, type ComponentReader } from './components/component-reader';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const app = await createApiApp(config);
  await app.listen(config.port, config.host).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'EADDRINUSE') throw portInUse(config.port, 'PORT');
    // An address this machine does not have, or a name that does not resolve.
    if (e.code === 'EADDRNOTAVAIL' || e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN') throw new Error(`cannot listen on HOST=${config.host}: ${e.message}; set HOST to an address of this machine (0.0.0.0 for all)`);
    throw e;
  });
  // The public figures and, on this port only, the process's own (the merge is a registry of its own).
  const health = app.get(HealthController);
  await serveAppOps(app, { port: config.apiMetricsPort, setting: 'API_METRICS_PORT', prefix: 'api_', registry: Registry.merge([app.get(MetricsController).registry]), healthy: () => ({ ...health.health() }) });
  const isolation = app.get<ComponentReader>(COMPONENT_READER).isolation?.summary ?? 'none';
  process.stderr.write(`api listening on ${config.host}:${config.port} (${config.publicUrl}/v1); isolation: ${isolation}\n`);
}

main().catch((e: Error) => {
  process.stderr.write(`api failed to start: ${e.message}\n`);
  process.exit(1);
});
