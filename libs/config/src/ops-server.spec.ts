import { AddressInfo, createServer } from 'node:net';
import { Registry } from 'prom-client';
import { startOpsServer } from './ops-server';

describe('ops server', () => {
  it('serves /healthz, and a taken port is an error naming the setting to change', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '0.0.0.0', r));
    const port = (taken.address() as AddressInfo).port;
    try {
      await expect(startOpsServer(port, new Registry(), () => true, 'RUNNER_METRICS_PORT')).rejects.toThrow(
        `port ${port} is already in use (another instance on this host?): set RUNNER_METRICS_PORT to a free port (0 disables it)`,
      );
    } finally {
      await new Promise<void>((r) => taken.close(() => r()));
    }
    const server = await startOpsServer(port, new Registry(), () => true, 'RUNNER_METRICS_PORT');
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'ok' });
      // A probe's query string does not change the path.
      expect((await fetch(`http://127.0.0.1:${port}/healthz?probe=liveness`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/metrics?x=1`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/healthzz`)).status).toBe(404);
    } finally {
      server?.close();
    }
  });
});
