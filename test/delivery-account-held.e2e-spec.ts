import { client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { HungReceiver } from './support/hung-receiver';
import { scrapeMetrics } from './support/metrics';
import { Emitter, insertSource, Receiver, subscriptionsLoaded } from './events.helpers';

const MAX_ACK_PENDING = 100;
const HELD_PER_ACCOUNT = 20;
const A_WEBHOOKS = 4;
const A_EVENTS = 100;
const B_EVENTS = 5;

/**
 * One account's hung receivers against another account's queued deliveries. The DELIVERIES consumer is shared by
 * every account and hands out at most WEBHOOK_MAX_ACK_PENDING (100 here) unacknowledged messages. A's four webhooks
 * hang (no answer until the test releases them; WEBHOOK_TIMEOUT_MS 120 s) and get 400 deliveries through DELIVERIES; B's webhook failed a
 * moment ago, so its events are queued there too, behind A's. Before, A's waiting messages took all 100 and B got
 * nothing until A's requests timed out. Now A holds WEBHOOK_HELD_PER_ACCOUNT (20) and the rest are held back
 * (acknowledged, parked for 5-15 s): B's events arrive while A's requests still hang, and once A's receivers answer
 * each of A's deliveries arrives, once.
 */
describe("one account's hung webhooks do not stop another account's queued deliveries", () => {
  let system: System;
  let emitter: Emitter;
  let hung: HungReceiver;
  let healthy: Receiver;

  beforeAll(async () => {
    system = await startSystem(
      {
        WEBHOOK_MAX_ACK_PENDING: String(MAX_ACK_PENDING),
        WEBHOOK_HELD_PER_ACCOUNT: String(HELD_PER_ACCOUNT),
        WEBHOOK_TIMEOUT_MS: '120000',
        WEBHOOK_RETRY_SCHEDULE: '1h',
        DELIVERY_METRICS_PORT: String(await freePort()),
      },
      { apps: ['api', 'delivery'] },
    );
    emitter = await Emitter.connect(system);
    hung = await new HungReceiver().start();
    healthy = await new Receiver().start();
    healthy.respond = (_r, n) => ({ status: n === 1 ? 503 : 200 });
  });
  afterAll(async () => {
    await hung?.stop();
    await healthy?.stop();
    await emitter?.close();
    await system?.stop();
  });

  const metrics = (): Promise<Record<string, number>> => scrapeMetrics(`http://127.0.0.1:${system.env.DELIVERY_METRICS_PORT}/metrics`);

  it("delivers B's queued events while A's 400 deliveries wait on receivers that do not answer, and every delivery of A once they do", async () => {
    const a = createUser(system);
    const b = createUser(system);
    const apiA = client(system, a.apiKey);
    const apiB = client(system, b.apiKey);
    const [srcA, srcB] = [await insertSource(system, a.id), await insertSource(system, b.id)];
    const port = new URL(hung.url).port;
    for (let i = 0; i < A_WEBHOOKS; i++) {
      const wh = (await apiA.post('/webhooks', { url: `http://127.0.0.${i + 2}:${port}/hook` })).body.data.id;
      expect((await apiA.post('/subscriptions', { emitter_id: srcA, listener_id: wh })).status).toBe(200);
    }
    const whB = (await apiB.post('/webhooks', { url: healthy.url })).body.data.id;
    expect((await apiB.post('/subscriptions', { emitter_id: srcB, listener_id: whB })).status).toBe(200);
    await subscriptionsLoaded(system);

    // Each webhook fails once: for the next minute their events go through DELIVERIES.
    await emitter.emit(srcA, a.id, { prime: true });
    await emitter.emit(srcB, b.id, { prime: true });
    await eventually(async () => hung.received.length === A_WEBHOOKS && healthy.received.length === 1, { what: 'the failed first attempts' });

    for (let i = 0; i < A_EVENTS; i++) await emitter.emit(srcA, a.id, { i });
    // A's held deliveries hang at its receivers.
    await eventually(async () => hung.received.length >= A_WEBHOOKS + HELD_PER_ACCOUNT, { what: "A's requests to hang", timeoutMs: 30_000 });
    const direct = (await metrics())['delivery_webhook_routes_total{path="direct"}'] ?? 0;
    const ids: string[] = [];
    for (let i = 0; i < B_EVENTS; i++) ids.push((await emitter.emit(srcB, b.id, { i })).id);
    // Well before A's requests time out (120 s).
    await eventually(async () => ids.every((id) => healthy.eventIds().has(id)), { what: "B's queued events", timeoutMs: 30_000 });
    const m = await metrics();
    // B's events went through DELIVERIES, behind A's.
    expect(m['delivery_webhook_routes_total{path="direct"}'] ?? 0).toBe(direct);
    // A's attempts stayed at its bound: the rest of its deliveries were handed back, not held.
    expect(hung.received.length - A_WEBHOOKS).toBeLessThanOrEqual(HELD_PER_ACCOUNT);
    expect(m['delivery_webhook_held_back_total{reason="account"}']).toBeGreaterThan(0);
    // Every other one of A's deliveries is held back, comes again and is held back again while A's requests hang.
    await eventually(async () => {
      const n = (await metrics())['delivery_webhook_held_back_total{reason="account"}'] ?? 0;
      return n >= 2 * (A_WEBHOOKS * A_EVENTS - HELD_PER_ACCOUNT);
    }, { what: "A's deliveries held back again", timeoutMs: 30_000 });
    expect(hung.received.length - A_WEBHOOKS).toBeLessThanOrEqual(HELD_PER_ACCOUNT);

    // Once A's receivers answer, each of its deliveries arrives once: none held back was lost.
    hung.release();
    await eventually(async () => hung.deliveries().size === A_WEBHOOKS * (A_EVENTS + 1), { what: "all of A's deliveries", timeoutMs: 60_000 });
    expect(hung.received.length).toBe(A_WEBHOOKS * (A_EVENTS + 2)); // each webhook's failed first attempt, then each event once
  });
});
