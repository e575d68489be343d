import { client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { Emitter, insertSource, Receiver, subscriptionsLoaded } from './events.helpers';

/**
 * A tenant who creates webhooks, has one event delivered to each and deletes them, over and over, must not grow
 * the delivery app: what it keeps per webhook (its lane, catch-up state, signer) goes with the webhook.
 */
describe('the delivery app forgets deleted webhooks', () => {
  let system: System;
  let emitter: Emitter;
  let receiver: Receiver;
  let opsPort = 0;

  beforeAll(async () => {
    opsPort = await freePort();
    system = await startSystem({ DELIVERY_METRICS_PORT: String(opsPort) }, { apps: ['api', 'delivery'] });
    emitter = await Emitter.connect(system);
    receiver = await new Receiver().start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await emitter?.close();
    await system?.stop();
  });

  const lanes = async (): Promise<number> => ((await (await fetch(`http://127.0.0.1:${opsPort}/healthz`)).json()) as { webhooks: { lanes: number } }).webhooks.lanes;

  it('holds no lane for a deleted webhook once its deliveries are done', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const src = await insertSource(system, user.id);
    const before = await lanes();
    const hooks: string[] = [];
    for (let i = 0; i < 30; i++) {
      const wh = (await api.post('/webhooks', { url: receiver.url })).body.data.id as string;
      expect((await api.post('/subscriptions', { emitter_id: src, listener_id: wh })).status).toBe(200);
      hooks.push(wh);
    }
    await subscriptionsLoaded(system);
    await emitter.emit(src, user.id, { churn: true });
    await eventually(async () => receiver.received.length === hooks.length, { what: 'one delivery per webhook' });
    expect(await lanes()).toBeGreaterThanOrEqual(before + hooks.length);
    for (const wh of hooks) expect((await api.del(`/webhooks/${wh}`)).status).toBe(204);
    await eventually(async () => (await lanes()) <= before, { what: "the deleted webhooks' lanes forgotten", timeoutMs: 90_000, intervalMs: 1000 });
  }, 120_000);
});
