import { client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { firstDelivered, httpSourceToWebhook, Receiver, subscriptionsLoaded } from './events.helpers';
import { FLOOD_SOURCE } from './support/components';

const WEBHOOKS = 16;
const EVENTS = 1250;
/** How long M's requests hang before the delivery app gives up on them: V's event must come well before. */
const HANG_MS = 120_000;

/** The delivery app's routing and lane figures, to say where V's event waited when it does not come. */
async function deliveryFigures(system: System): Promise<string> {
  const text = await fetch(`http://127.0.0.1:${system.env.DELIVERY_METRICS_PORT}/metrics`).then((r) => r.text(), (e: Error) => e.message);
  return text.split('\n').filter((l) => /^delivery_(emits_handed_back|webhook_routes|webhook_held|webhook_attempts|events_indexed|webhook_held_back)/.test(l)).join('\n');
}

/**
 * One account's many silent webhooks against another account's deliveries. M's 16 webhooks point at a receiver
 * that never answers (each request held until WEBHOOK_TIMEOUT_MS, HANG_MS here), and one run gives them 20,000
 * deliveries. Before, M's lanes filled the delivery app's direct path (5,000) and its DELIVERIES share (10,000,
 * 1,000 kept per slow webhook), and V's next event waited behind them until M's requests timed out. Now a
 * quarter of each is kept for the accounts below it: V's event is delivered while M's requests still hang.
 */
describe("one account's silent webhooks do not hold back another account's deliveries", () => {
  let system: System;
  let silent: Receiver;
  let fast: Receiver;

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', WEBHOOK_TIMEOUT_MS: String(HANG_MS), DELIVERY_METRICS_PORT: String(await freePort()) });
    // On every loopback address: each webhook its own origin (the delivery app pools connections per origin).
    silent = await new Receiver().start('0.0.0.0');
    silent.respond = () => new Promise<undefined>(() => undefined);
    fast = await new Receiver().start();
  });
  afterAll(async () => {
    await silent?.stop();
    await fast?.stop();
    await system?.stop();
  });

  it("delivers V's event while M's 20,000 deliveries wait on receivers that never answer", async () => {
    const m = createUser(system);
    const v = createUser(system);
    const api = client(system, m.apiKey);
    const flood = (await api.post('/sources', { component_code: FLOOD_SOURCE, name: 'flood' })).body.data;
    for (let i = 0; i < WEBHOOKS; i++) {
      const wh = (await api.post('/webhooks', { url: `http://127.0.0.${i + 1}:${new URL(silent.url).port}/hook` })).body.data.id;
      expect((await api.post('/subscriptions', { emitter_id: flood.id, listener_id: wh })).status).toBe(200);
    }
    const victim = await httpSourceToWebhook(system, client(system, v.apiKey), fast.url);
    await subscriptionsLoaded(system);
    await firstDelivered(victim.url, fast);

    const res = await fetch(flood.configured_props.http.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: EVENTS }) });
    expect(res.status).toBe(200);
    // M's lanes are full: every webhook has its 32 requests hanging.
    await eventually(async () => silent.received.length >= WEBHOOKS * 32, { what: "M's requests to hang", timeoutMs: 30_000 });

    const hangingSince = silent.received[0].at;
    const before = fast.received.length;
    const sent = await fetch(victim.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"probe":"v"}' });
    expect(sent.status).toBe(200);
    const probe = () => fast.received.slice(before).find((r) => r.body === '{"probe":"v"}');
    // Half the time M's requests hang (a slow machine takes seconds; a queue behind M's requests, all of it).
    await eventually(async () => !!probe(), { what: "V's event delivered beside M's backlog", timeoutMs: HANG_MS / 2 }).catch(async (e: Error) => {
      throw new Error(`${e.message}\n${await deliveryFigures(system)}`);
    });
    // Before M's first request timed out: V's event did not wait for M's requests to end.
    expect(probe()!.at - hangingSince).toBeLessThan(HANG_MS);
  });

  it("delivers V's event to a host where M's webhooks hold their 128 requests hanging (each webhook has connections of its own)", async () => {
    const m = createUser(system);
    const v = createUser(system);
    const api = client(system, m.apiKey);
    const flood = (await api.post('/sources', { component_code: FLOOD_SOURCE, name: 'flood-shared-host' })).body.data;
    // One receiver, one origin: M's requests never answered, V's at once.
    const shared = await new Receiver().start();
    shared.respond = (r) => (r.headers['x-pd-emitter-id'] === flood.id ? new Promise<undefined>(() => undefined) : { status: 200 });
    try {
      const origin = new URL(shared.url).origin;
      for (let i = 0; i < 4; i++) {
        const wh = (await api.post('/webhooks', { url: `${origin}/hang${i}` })).body.data.id;
        expect((await api.post('/subscriptions', { emitter_id: flood.id, listener_id: wh })).status).toBe(200);
      }
      const victim = await httpSourceToWebhook(system, client(system, v.apiKey), `${origin}/v`);
      await subscriptionsLoaded(system);
      await firstDelivered(victim.url, shared);
      const res = await fetch(flood.configured_props.http.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: 100 }) });
      expect(res.status).toBe(200);
      // As many as the connections one pool keeps per origin (64): a pool shared by every webhook would now be full.
      await eventually(async () => shared.received.filter((r) => r.headers['x-pd-emitter-id'] === flood.id).length >= 64, { what: "M's requests to hang", timeoutMs: 30_000 });
      const sent = await fetch(victim.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"probe":"shared"}' });
      expect(sent.status).toBe(200);
      // Well before M's requests time out (HANG_MS).
      await eventually(async () => shared.received.some((r) => r.body === '{"probe":"shared"}'), { what: "V's event delivered beside M's hanging requests on the same host", timeoutMs: HANG_MS / 2 }).catch(async (e: Error) => {
        throw new Error(`${e.message}\n${await deliveryFigures(system)}`);
      });
    } finally {
      await shared.stop();
    }
  });
  it("routes V's event while M's one run fans out to 200 healthy webhooks (400,000 deliveries)", async () => {
    // M's webhooks answer at once: nothing fails or hangs, there is only much of it. Before, the router awaited the
    // DELIVERIES publishes of M's fan-out past its 10,000 in the background inside its batch, so V's event, emitted
    // behind M's 2,000, waited until about 400,000 publishes were stored (more than a minute). Now it takes seconds
    // (up to about 10 s on a loaded 2-core machine; 30 s allowed).
    const m = createUser(system);
    const v = createUser(system);
    const api = client(system, m.apiKey);
    const flood = (await api.post('/sources', { component_code: FLOOD_SOURCE, name: 'flood-fan-out' })).body.data;
    const many = await new Receiver().start('0.0.0.0');
    try {
      const port = new URL(many.url).port;
      for (let i = 0; i < 200; i++) {
        const wh = (await api.post('/webhooks', { url: `http://127.0.0.${(i % 100) + 1}:${port}/fan${i}` })).body.data.id;
        expect((await api.post('/subscriptions', { emitter_id: flood.id, listener_id: wh })).status).toBe(200);
      }
      const victim = await httpSourceToWebhook(system, client(system, v.apiKey), fast.url);
      await subscriptionsLoaded(system);
      await firstDelivered(victim.url, fast);
      const res = await fetch(flood.configured_props.http.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: 2000 }) });
      expect(res.status).toBe(200);
      await eventually(async () => many.received.length >= 1000, { what: "M's deliveries to start", timeoutMs: 30_000 });
      const sent = await fetch(victim.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"probe":"fan-out"}' });
      expect(sent.status).toBe(200);
      await eventually(async () => fast.received.some((r) => r.body === '{"probe":"fan-out"}'), { what: "V's event delivered beside M's fan-out", timeoutMs: 30_000 });
      // M's fan-out is still being routed and delivered meanwhile.
      expect(many.received.length).toBeLessThan(400_000);
    } finally {
      await many.stop();
    }
  });
});
