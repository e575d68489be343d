import { client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { Emitter, insertSource, Receiver, subscriptionsLoaded } from './events.helpers';
import { scrapeMetrics } from './support/metrics';

/**
 * Direct webhook deliveries (no DELIVERIES hop): a healthy webhook gets its
 * events POSTed by the router's process; a delivery replica killed while such a
 * POST is in flight loses nothing (the emit is acked only after the POST).
 */
describe('delivery: direct webhook POSTs from the router', () => {
  let system: System;
  let emitter: Emitter;

  beforeAll(async () => {
    system = await startSystem({ WEBHOOK_TIMEOUT_MS: '60000', DELIVERY_ACK_WAIT_MS: '2000', DELIVERY_METRICS_PORT: String(await freePort()) }, { apps: ['api', 'delivery'] });
    emitter = await Emitter.connect(system);
  });
  afterAll(async () => {
    await emitter?.close();
    await system?.stop();
  });

  const routes = async (port: string): Promise<Record<string, number>> => {
    const out: Record<string, number> = {};
    for (const [series, value] of Object.entries(await scrapeMetrics(`http://127.0.0.1:${port}/metrics`))) {
      const path = /^delivery_webhook_routes_total\{path="(\w+)"\}$/.exec(series)?.[1];
      if (path) out[path] = value;
    }
    return out;
  };

  it('POSTs the events of a healthy webhook directly, and a failing one through the durable queue', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const src = await insertSource(system, user.id);
    const receiver = await new Receiver().start();
    try {
      receiver.respond = (_r, n) => ({ status: n === 3 ? 503 : 200 });
      const wh = (await api.post('/webhooks', { url: receiver.url })).body.data.id;
      await api.post('/subscriptions', { emitter_id: src, listener_id: wh });
      await subscriptionsLoaded(system);
      for (let i = 0; i < 3; i++) await emitter.emit(src, user.id, { i });
      await eventually(async () => receiver.received.length >= 3, { what: 'three POSTs' });
      expect(await eventually(async () => ((await routes(system.env.DELIVERY_METRICS_PORT)).direct === 3 ? routes(system.env.DELIVERY_METRICS_PORT) : undefined), { what: 'three direct routes' })).toEqual({ direct: 3 });
      // The third POST failed: while the failure is recent, new events take the durable queue.
      await emitter.emit(src, user.id, { i: 3 });
      await eventually(async () => ((await routes(system.env.DELIVERY_METRICS_PORT)).queue === 1 ? true : undefined), { what: 'a queued route' });
      await eventually(async () => receiver.eventIds().size === 4, { what: 'the fourth event' });
    } finally {
      await receiver.stop();
    }
  });

  it('loses nothing when the delivery replica dies while a direct POST is in flight', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const src = await insertSource(system, user.id);
    const receiver = await new Receiver().start();
    try {
      // The first POST never gets an answer: the replica dies holding it.
      receiver.respond = (_r, n) => (n === 1 ? new Promise<undefined>((r) => r(undefined)) : { status: 200 });
      const wh = (await api.post('/webhooks', { url: receiver.url })).body.data.id;
      await api.post('/subscriptions', { emitter_id: src, listener_id: wh });
      await subscriptionsLoaded(system);
      const ev = await emitter.emit(src, user.id, { hello: 'direct' });
      await eventually(async () => receiver.received.length === 1, { what: 'the direct POST to arrive' });
      // The replica holds the POST in flight, and the router the emit waiting for it.
      expect(await scrapeMetrics(`http://127.0.0.1:${system.env.DELIVERY_METRICS_PORT}/metrics`)).toMatchObject({
        'delivery_webhook_held{path="direct"}': 1,
        'delivery_webhook_held{path="queue"}': 0,
        delivery_webhook_in_flight: 1,
        delivery_router_held: 1,
      });
      await system.stopApp('delivery', 'SIGKILL');
      await system.startApp('delivery', 'delivery2', { DELIVERY_METRICS_PORT: String(await freePort()) });
      const again = await eventually(async () => receiver.received.find((r, i) => i > 0 && r.headers['x-pd-event-id'] === ev.id), { what: 'the event POSTed again by the new replica', timeoutMs: 30_000 });
      expect(JSON.parse(again.body)).toEqual({ hello: 'direct' });
      expect(again.headers['webhook-id']).toBe(receiver.received[0].headers['webhook-id']);
    } finally {
      await receiver.stop();
    }
  });
});
