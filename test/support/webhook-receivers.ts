import { client, TestUser } from './accounts';
import type { System } from './system';
import { insertSource, Receiver, subscriptionsLoaded } from '../events.helpers';

/**
 * For a describe block: the function that starts a webhook Receiver; every one it started is stopped after the block's
 * tests. Called before the block's own afterAll, it stops them (failing any request they hold) before the system stops.
 */
export function receiversOfBlock(): () => Promise<Receiver> {
  const started: Receiver[] = [];
  afterAll(async () => {
    await Promise.all(started.map((r) => r.stop()));
  });
  return async () => {
    const r = await new Receiver().start();
    started.push(r);
    return r;
  };
}

/** A new source of `user`'s subscribed to a new webhook pointing at `r`, once delivery has loaded the subscription: both ids and the webhook's secret. */
export async function wireWebhook(system: System, user: TestUser, r: Receiver): Promise<{ src: string; wh: string; secret: string }> {
  const api = client(system, user.apiKey);
  const src = await insertSource(system, user.id);
  const created = await api.post(`/webhooks?url=${encodeURIComponent(r.url)}`);
  expect(created.status).toBe(200);
  const wh = created.body.data.id;
  expect((await api.post('/subscriptions', { emitter_id: src, listener_id: wh })).status).toBe(200);
  await subscriptionsLoaded(system);
  return { src, wh, secret: created.body.data.secret };
}
