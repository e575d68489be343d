import { client, createUser, TestUser } from './support/accounts';
import { InternalServer } from './support/internal-server';
import { eventually, freePort, startSystem, System } from './support/system';
import { Emitter, insertSource, subscriptionsLoaded } from './events.helpers';
import { interfaceAddress } from '../libs/net/src/test-support/interface-address';

const COMPONENT = 'export default { name: "internal", version: "0.0.1", async run() {} };';

/**
 * The platform's own requests under the default policy (ALLOW_LOOPBACK=false) never reach a service
 * of this machine through one of its interface addresses: a service bound to 0.0.0.0 (metrics,
 * NATS monitoring) answers there as on 127.0.0.1, and its answer would land in a delivery log or
 * in a component's code, both readable by the tenant.
 */
/**
 * The delivery log of a webhook to `url`, subscribed to a new source of `user` that emits one event, once its
 * attempts are exhausted; each attempt was refused before connecting (no response code, no body).
 */
async function refusedWebhookLog(system: System, emitter: Emitter, user: TestUser, url: string): Promise<{ error: string }[]> {
  const api = client(system, user.apiKey);
  const src = await insertSource(system, user.id);
  const wh = (await api.post('/webhooks', { url })).body.data.id;
  await api.post('/subscriptions', { emitter_id: src, listener_id: wh });
  await subscriptionsLoaded(system);
  await emitter.emit(src, user.id, { probe: url });
  const log = await eventually(async () => {
    const d = (await api.get(`/webhooks/${wh}/deliveries`)).body.data;
    return d.some((x: { status: string }) => x.status === 'exhausted') ? d : undefined;
  }, { what: `attempts to ${url} exhausted` });
  expect(log.every((x: { response_code: number | null; response_body?: string | null }) => x.response_code === null && !x.response_body)).toBe(true);
  return log;
}

describe('outbound requests to an address of this machine', () => {
  let system: System;
  let emitter: Emitter;
  let internal: InternalServer;
  let base = '';

  beforeAll(async () => {
    internal = await new InternalServer(COMPONENT).start('0.0.0.0');
    base = `http://${interfaceAddress()}:${internal.port}`;
    system = await startSystem({ ALLOW_LOOPBACK: 'false', WEBHOOK_RETRY_SCHEDULE: '100ms', DELIVERY_METRICS_PORT: String(await freePort()) }, { apps: ['api', 'delivery'] });
    emitter = await Emitter.connect(system);
  });
  afterAll(async () => {
    await emitter?.close();
    await system?.stop();
    await internal?.stop();
  });

  it('are refused for webhooks and component_url, and nothing of the service reaches the tenant', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);

    const component = await api.post('/components', { component_url: `${base}/component.mjs` });
    expect(component.status).toBe(400);
    expect(component.body.error).toMatch(/is an address of this machine \(allowed only with ALLOW_LOOPBACK=true\)/);

    const log = await refusedWebhookLog(system, emitter, user, `${base}/metrics`);
    expect(log[0].error).toMatch(/is an address of this machine \(allowed only with ALLOW_LOOPBACK=true\)/);
    expect(internal.hits).toEqual([]);
  });
});

describe('a workflow $.send.http to an address of this machine', () => {
  let system: System;
  let internal: InternalServer;
  let base = '';
  let metricsPort = 0;

  beforeAll(async () => {
    internal = await new InternalServer('ok').start('0.0.0.0');
    base = `http://${interfaceAddress()}:${internal.port}`;
    metricsPort = await freePort();
    system = await startSystem({ ALLOW_LOOPBACK: 'false', WEBHOOK_RETRY_SCHEDULE: '100ms', DELIVERY_METRICS_PORT: String(metricsPort) });
  });
  afterAll(async () => {
    await system?.stop();
    await internal?.stop();
  });

  it('is refused for good (never retried), and the service is never hit', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const code = `export default defineComponent({ async run({ $ }) { $.send.http({ method: "POST", url: ${JSON.stringify(`${base}/admin`)}, data: { x: 1 } }); } });`;
    const wf = (await api.post('/workflows', { name: 'own-address', trigger: { manual: {} }, steps: [{ name: 'send', code }] })).body.data;
    expect((await api.post(`/workflows/${wf.id}/run`, { event: {} })).status).toBeLessThan(300);
    const failed = /delivery_send_attempts_total\{kind="http",outcome="failed"\} (\d+)/;
    await eventually(async () => {
      const text = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text()).catch(() => '');
      return Number(failed.exec(text)?.[1] ?? 0) >= 1;
    }, { what: 'the send to an address of this machine failed for good', timeoutMs: 30_000 });
    expect(internal.hits).toEqual([]);
  });
});

describe("the platform's own ports with ALLOW_LOOPBACK=true (npm start's default)", () => {
  let system: System;
  let emitter: Emitter;
  let internal: InternalServer;
  let metricsPort = 0;

  beforeAll(async () => {
    internal = await new InternalServer(COMPONENT).start('127.0.0.1');
    metricsPort = await freePort();
    system = await startSystem({ ALLOW_LOOPBACK: 'true', WEBHOOK_RETRY_SCHEDULE: '100ms', DELIVERY_METRICS_PORT: String(metricsPort) }, { apps: ['api', 'delivery'] });
    emitter = await Emitter.connect(system);
  });
  afterAll(async () => {
    await emitter?.close();
    await system?.stop();
    await internal?.stop();
  });

  it("refuse webhooks and component_url to the delivery app's metrics, while another local port is served", async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const refused = new RegExp(`:${metricsPort} is a port of this platform's own services on this machine`);
    // Loopback is allowed: a local server's code is fetched.
    expect((await api.post('/components', { component_url: `http://127.0.0.1:${internal.port}/c.mjs` })).status).toBe(200);
    const component = await api.post('/components', { component_url: `http://localhost:${metricsPort}/metrics` });
    expect([component.status, component.body.code]).toEqual([400, 'invalid_request']);
    expect(component.body.error).toMatch(refused);

    // A literal address is judged when the webhook is made; a name at each delivery, after resolution.
    const literal = await api.post('/webhooks', { url: `http://127.0.0.1:${metricsPort}/metrics` });
    expect([literal.status, literal.body.code, literal.body.details]).toEqual([400, 'invalid_request', { field: 'url', reason: 'blocked' }]);
    expect(literal.body.error).toMatch(refused);
    const log = await refusedWebhookLog(system, emitter, user, `http://localhost:${metricsPort}/metrics`);
    expect(log[0].error).toMatch(refused);
  });
});
