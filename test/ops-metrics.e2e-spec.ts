import { freePort, startSystem, System } from './support/system';

/**
 * The operators' ports: `/metrics` of each app carries its process's own figures (memory, CPU, event loop, GC);
 * the api's public `/metrics` does not, its `API_METRICS_PORT` does (off by default).
 */
describe('process metrics on the operators ports', () => {
  let system: System;
  const text = async (url: string): Promise<string> => {
    const res = await fetch(url);
    expect(res.status).toBe(200);
    return res.text();
  };

  beforeAll(async () => {
    system = await startSystem({ API_METRICS_PORT: String(await freePort()), DELIVERY_METRICS_PORT: String(await freePort()), RUNNER_METRICS_PORT: String(await freePort()) });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("the api's operators port serves the public figures and the process's; the public port only its own", async () => {
    const ops = await text(`http://127.0.0.1:${system.env.API_METRICS_PORT}/metrics`);
    expect(ops).toMatch(/^api_process_resident_memory_bytes \d+/m);
    expect(ops).toMatch(/^api_nodejs_eventloop_lag_seconds [\d.e-]+/m);
    expect(ops).toMatch(/^api_ingest_invocations_pending \d+/m);
    const open = await text(`${system.origin}/metrics`);
    expect(open).toMatch(/^api_ingest_invocations_pending \d+/m);
    expect(open).not.toContain('api_process_');
    expect(open).not.toContain('api_nodejs_');
    const health = await (await fetch(`http://127.0.0.1:${system.env.API_METRICS_PORT}/healthz`)).json();
    expect(health).toMatchObject({ status: 'ok', isolation: expect.any(String), ingest: expect.any(Object) });
  });

  it('the runner and delivery ports serve their processes figures', async () => {
    expect(await text(`http://127.0.0.1:${system.env.RUNNER_METRICS_PORT}/metrics`)).toMatch(/^runner_process_resident_memory_bytes \d+/m);
    expect(await text(`http://127.0.0.1:${system.env.DELIVERY_METRICS_PORT}/metrics`)).toMatch(/^delivery_process_resident_memory_bytes \d+/m);
  });
});
