import { DeliveryMessage, EmittedEvent, encodeJson, newId } from '@app/contracts';
import { admin, client, createUser } from './support/accounts';
import { scrapeMetrics } from './support/metrics';
import { eventually, freePort, startSystem, System } from './support/system';
import { receiversOfBlock } from './support/webhook-receivers';
import { Emitter, insertSource, Receiver, sql, subscriptionsLoaded } from './events.helpers';

/**
 * A webhook delivery that waited — a retry in `webhook_retries`, a message on `DELIVERIES` — is sent only while its
 * event still routes to the webhook. Before, the router stopped routing new events of a route at once, but what was
 * already queued for it went on being retried: a member removed from an org kept getting the org's events at their
 * own webhook for as long as its retries lasted, and so did the webhook of a deleted subscription.
 */
describe('waiting webhook deliveries of a route that went', () => {
  let system: System;
  let emitter: Emitter;
  let metricsUrl: string;

  const receiver = receiversOfBlock();

  beforeAll(async () => {
    const port = await freePort();
    system = await startSystem({ WEBHOOK_RETRY_SCHEDULE: Array(30).fill('1s').join(','), DELIVERY_METRICS_PORT: String(port) }, { apps: ['api', 'delivery'] });
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
    emitter = await Emitter.connect(system);
  });
  afterAll(async () => {
    await emitter?.close();
    await system?.stop();
  });

  const numbers = (r: Receiver): Set<string> => new Set(r.received.map((x) => /"n":(\d+)/.exec(x.body)?.[1] ?? '?'));
  const loaded = async (): Promise<number> => ((await (await fetch(`http://127.0.0.1:${system.env.DELIVERY_METRICS_PORT}/healthz`)).json()) as { subscriptions: number }).subscriptions;
  const unrouted = async (): Promise<number> => (await scrapeMetrics(metricsUrl))['delivery_webhook_attempts_total{outcome="unrouted"}'] ?? 0;

  it("drops an ex-member's and a deleted subscription's waiting retries; a route that still holds gets its own", async () => {
    const leaver = createUser(system);
    const stayer = createUser(system);
    const org = admin(system, ['orgs', 'create', '--name', 'Leak', '--orgname', `leak-${leaver.id.slice(2, 12).toLowerCase()}`]);
    for (const u of [leaver, stayer]) admin(system, ['orgs', 'add-member', '--org', org.id, '--user', u.id]);
    const l = client(system, leaver.apiKey);
    const s = client(system, stayer.apiKey);
    const src = await insertSource(system, org.id, stayer.id);
    const [left, deleted, kept] = [await receiver(), await receiver(), await receiver()];
    for (const r of [left, deleted, kept]) r.respond = () => ({ status: 500 });
    const subscribe = async (c: typeof l, r: Receiver, orgId?: string): Promise<string> => {
      const wh: string = (await c.post(`/webhooks${orgId ? `?org_id=${orgId}` : ''}`, { url: r.url })).body.data.id;
      expect((await c.post(`/subscriptions?emitter_id=${src}&listener_id=${wh}`)).status).toBe(200);
      return wh;
    };
    // The leaver's own webhook, fed the org's events while they are a member; the stayer's own, whose
    // subscription is deleted; the org's, which keeps its route.
    const leftHook = await subscribe(l, left);
    const deletedHook = await subscribe(s, deleted);
    await subscribe(s, kept, org.id);
    await subscriptionsLoaded(system);
    const before = await loaded();
    const droppedBefore = await unrouted();

    for (let n = 1; n <= 3; n++) await emitter.emit(src, org.id, { n });
    await eventually(async () => [left, deleted, kept].every((r) => numbers(r).size === 3), { what: 'every event failed once at every webhook: their retries wait' });

    expect(admin(system, ['orgs', 'remove-member', '--org', org.id, '--user', leaver.id]).removed).toBe(true);
    expect((await s.del(`/subscriptions?emitter_id=${src}&listener_id=${deletedHook}&event_name=`)).status).toBe(204);
    await eventually(async () => (await loaded()) === before - 2, { what: 'the delivery app to read both changes' });
    // An attempt under way before the changes were read may still arrive: one retry period for it.
    await new Promise((r) => setTimeout(r, 1_500));
    const sentBefore = [left.received.length, deleted.received.length];
    for (const r of [left, deleted, kept]) r.respond = () => ({ status: 200 });

    const leaked = (): boolean => left.received.length > sentBefore[0] || deleted.received.length > sentBefore[1];
    await eventually(async () => kept.received.length > 3 && numbers(kept).size === 3 && (leaked() || (await unrouted()) - droppedBefore >= 6), {
      what: 'the retries of the route that holds delivered, the others come due',
      timeoutMs: 30_000,
    });
    expect([left.received.length, deleted.received.length]).toEqual(sentBefore);
    expect((await unrouted()) - droppedBefore).toBe(6);
    const waiting = await sql<{ n: number }>(system, 'select count(*)::int as n from webhook_retries where webhook_id = any($1)', [[leftHook, deletedHook]]);
    expect(waiting[0].n).toBe(0);
  });

  it('sends a queued delivery whose route this replica has not heard of yet', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const src = await insertSource(system, user.id);
    const [late, control] = [await receiver(), await receiver()];
    const wh: string = (await api.post('/webhooks', { url: late.url })).body.data.id;
    const controlHook: string = (await api.post('/webhooks', { url: control.url })).body.data.id;
    expect((await api.post('/subscriptions', { emitter_id: src, listener_id: controlHook })).status).toBe(200);
    // Routed, the control's event shows the delivery app has read the changes announced so far.
    await emitter.emit(src, user.id, { n: 0 });
    await eventually(async () => control.received.length > 0, { what: 'the control event' });

    // A route another replica has read but this one has not (its announcement late or lost): written without one.
    // A glob, the account's every source.
    const subscriptionId = newId('subscription');
    await sql(system, `insert into subscriptions (id, owner_id, emitter_id, listener_id, event_name, created_at_ms, created_at) values ($1, $2, 'dc_*', $3, '', 0, 0)`, [subscriptionId, user.id, wh]);
    const now = Date.now();
    const event: EmittedEvent = { id: `${now}-0`, emitterId: src, ownerId: user.id, name: '', event: { n: 1 }, emitId: `emit_${subscriptionId}`, ts: now, emittedAtMs: now };
    const msg: DeliveryMessage = { webhookId: wh, subscriptionId, event };
    await emitter.nc.jetstream().publish(emitter.names.delivery(wh), encodeJson(msg), { msgID: `${subscriptionId}:${src}:${event.id}` });
    await eventually(async () => numbers(late).has('1'), { what: 'the queued delivery at the webhook' });
  });
});
