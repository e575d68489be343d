import { createServer, Server } from 'node:http';
import { collectDefaultMetrics, Registry } from 'prom-client';

export interface AppOps {
  port: number;
  /** The variable that moves the port (named when it is taken). */
  setting: string;
  /** `<prefix>process_*` and `<prefix>nodejs_*`: the process's own figures (memory, CPU, event loop, GC), added to `registry`. */
  prefix: string;
  registry: Registry;
  healthy: () => boolean | Record<string, unknown>;
}

/**
 * An app's operators' port: `registry` with the process's own figures. A port that cannot be opened ends the
 * start after closing `app` (what it holds: leases, NATS); the server closes on SIGTERM.
 */
export async function serveAppOps(app: { close(): Promise<void> }, ops: AppOps): Promise<void> {
  collectDefaultMetrics({ register: ops.registry, prefix: ops.prefix });
  const server = await startOpsServer(ops.port, ops.registry, ops.healthy, ops.setting).catch(async (e: Error) => {
    await app.close();
    throw e;
  });
  process.on('SIGTERM', () => server?.close());
}

/**
 * `/healthz` and `/metrics` (Prometheus text) for the apps' operators' ports.
 * `healthy` decides the health status; port 0 disables the server. `portSetting`
 * names the variable to change when the port is taken.
 */
export async function startOpsServer(port: number, registry: Registry, healthy: () => boolean | Record<string, unknown>, portSetting?: string): Promise<Server | undefined> {
  if (!port) return undefined;
  const server = createServer((req, res) => {
    // A probe may add a query string (`/healthz?probe=liveness`, a cache buster): the path decides.
    const path = (req.url ?? '').split('?')[0];
    if (path === '/healthz') {
      const h = healthy();
      const ok = h === true || (typeof h === 'object' && h !== null);
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
      res.end(JSON.stringify(typeof h === 'object' ? { status: 'ok', ...h } : { status: ok ? 'ok' : 'unavailable' }));
      return;
    }
    if (path === '/metrics') {
      registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': registry.contentType });
          res.end(text);
        },
        () => {
          res.writeHead(500);
          res.end();
        },
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'not found', code: 'not_found' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => reject(e.code === 'EADDRINUSE' ? portInUse(port, portSetting) : e));
    server.listen(port, '0.0.0.0', () => resolve());
  });
  return server;
}

/** The error for a taken port, naming the setting that moves it (a second replica on one host needs its own). */
export function portInUse(port: number, setting?: string): Error {
  const fix = setting ? `: set ${setting} to a free port${setting === 'PORT' ? '' : ' (0 disables it)'}` : '';
  return new Error(`port ${port} is already in use (another instance on this host?)${fix}`);
}
