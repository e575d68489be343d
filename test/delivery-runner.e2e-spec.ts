import { Webhook as Verifier } from 'standardwebhooks';
import { client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { Receiver, subscriptionsLoaded } from './events.helpers';

// Real emits: HTTP request → api → runner (the component's run) → EMITS → delivery.
const FORWARDER = `module.exports = {
  name: "Forwarder", version: "1",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    console.log("got", event.body.n);
    this.$emit({ n: event.body.n }, { summary: "n=" + event.body.n });
  },
};`;
const LISTENER = `module.exports = {
  name: "Listener", version: "1",
  async run(event) { this.$emit({ forwarded: event }); },
};`;
const THROWER = `module.exports = {
  name: "Thrower", version: "1",
  props: { http: { type: "$.interface.http" } },
  async run(event) { throw new Error("boom " + event.body.n); },
};`;

describe('delivery of real emits from the runner', () => {
  let system: System;
  let receiver: Receiver;

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', DELIVERY_METRICS_PORT: String(await freePort()) });
    receiver = await new Receiver().start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await system?.stop();
  });

  it('delivers a source\'s emits to a webhook, to a listening source, and its logs and errors to their channels', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const hook = (await api.post('/webhooks', { url: receiver.url })).body.data;
    // Auto-subscription before the sources exist: new sources' errors go to the webhook.
    expect((await api.post(`/auto_subscriptions?event_name=$errors&listener_id=${hook.id}`)).status).toBe(200);
    const a = (await api.post('/sources', { component_code: FORWARDER, name: 'forwarder' })).body.data;
    const b = (await api.post('/sources', { component_code: LISTENER, name: 'listener' })).body.data;
    const c = (await api.post('/sources', { component_code: THROWER, name: 'thrower' })).body.data;
    expect((await api.post('/subscriptions', { emitter_id: a.id, listener_id: hook.id })).status).toBe(200);
    expect((await api.post('/subscriptions', { emitter_id: a.id, listener_id: b.id })).status).toBe(200);
    await subscriptionsLoaded(system);

    const send = (url: string, n: number): Promise<Response> => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
    // The runner may need a moment to own new sources; the endpoint stores invocations either way.
    expect((await send(a.configured_props.http.endpoint_url, 1)).status).toBe(200);
    expect((await send(c.configured_props.http.endpoint_url, 7)).status).toBe(200);

    const fromA = await eventually(async () => receiver.received.find((r) => r.headers['x-pd-emitter-id'] === a.id), { what: 'the webhook POST of A\'s event', timeoutMs: 60_000 });
    expect(JSON.parse(fromA.body)).toEqual({ n: 1 });
    expect(new Verifier(hook.secret).verify(fromA.body, fromA.headers as Record<string, string>)).toEqual({ n: 1 });
    const summaries = (await api.get(`/sources/${a.id}/event_summaries?expand=summary`)).body.data;
    expect(summaries[0]).toEqual(expect.objectContaining({ id: fromA.headers['x-pd-event-id'], event: { n: 1 }, summary: 'n=1' }));
    expect(fromA.headers['webhook-id']).toBe(summaries[0].id);

    const forwarded = await eventually(async () => (await api.get(`/sources/${b.id}/event_summaries`)).body.data?.[0], { what: 'B\'s emit of the forwarded event', timeoutMs: 60_000 });
    expect(forwarded.event).toEqual({ forwarded: { n: 1 } });

    const logs = await eventually(async () => (await api.get(`/sources/${a.id}/event_summaries?event_name=$logs`)).body.data?.[0], { what: 'A\'s $logs event', timeoutMs: 30_000 });
    expect(JSON.stringify(logs.event)).toContain('got');

    const err = await eventually(async () => receiver.received.find((r) => r.headers['x-pd-emitter-id'] === c.id), { what: 'C\'s $errors event at the webhook', timeoutMs: 60_000 });
    expect(err.headers['x-pd-event-name']).toBe('$errors');
    expect(err.body).toContain('boom 7');

    // The runner's usage records are aggregated into the user's daily figures.
    await eventually(async () => (await api.get('/users/me')).body.data.daily_invocations_used >= 3, { what: 'usage counted', timeoutMs: 30_000 });
  });

  it('counts every invocation once when a runner sums usage records', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const a = (await api.post('/sources', { component_code: FORWARDER, name: 'counted' })).body.data;
    const send = (n: number): Promise<Response> => fetch(a.configured_props.http.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
    // Concurrent requests finish within a few of the runner's usage windows: several invocations per record.
    const statuses = await Promise.all(Array.from({ length: 30 }, (_, i) => send(i).then((r) => r.status)));
    expect(statuses.every((s) => s === 200)).toBe(true);
    const summaries = await eventually(async () => {
      const data = (await api.get(`/sources/${a.id}/event_summaries?limit=100`)).body.data;
      return data?.length === 30 ? data : undefined;
    }, { what: 'all 30 runs', timeoutMs: 60_000 });
    expect(summaries).toHaveLength(30);
    await eventually(async () => (await api.get('/users/me')).body.data.daily_invocations_used === 30, { what: 'usage of 30 invocations', timeoutMs: 30_000 });
    // A later window adds nothing: each invocation was counted once.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await api.get('/users/me')).body.data.daily_invocations_used).toBe(30);
  });
});
