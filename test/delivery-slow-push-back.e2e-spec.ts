import type { ConsumerInfo } from 'nats';
import { Names } from '@app/contracts';
import { client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { HungReceiver } from './support/hung-receiver';
import { scrapeMetrics } from './support/metrics';
import { Emitter, insertSource, sql, subscriptionsLoaded } from './events.helpers';
import { HELD_MAX } from '../apps/delivery/src/webhooks-out/webhook-sender.service';

const A_EVENTS = 10_000;
const B_WEBHOOKS = 4;
const B_EVENTS = 1000;

/**
 * The push-back of a slow webhook's excess. A's one webhook hangs with 10,000 deliveries (it holds its
 * WEBHOOK_HELD_PER_ACCOUNT, 7,500); B's four hung webhooks then bring the replica's held messages to HELD_MAX,
 * and the slow lane keeps 1,000 and returns the rest until it should have drained (up to 30 s). Before, they were
 * nak'd with that delay: JetStream kept all 6,400 among the consumer's unacknowledged messages (its
 * WEBHOOK_MAX_ACK_PENDING, shared by every account) for 24-36 s, and cycle after cycle a slow webhook's backlog
 * filled it. Now they are parked in webhook_retries, due at the same time, and acknowledged: the consumer's
 * unacknowledged messages are the ones the replica holds. Once the receivers answer, every delivery arrives, once.
 */
describe("a slow webhook's pushed-back excess leaves the consumer's pending messages", () => {
  let system: System;
  let emitter: Emitter;
  let hung: HungReceiver;

  beforeAll(async () => {
    system = await startSystem(
      { WEBHOOK_TIMEOUT_MS: '120000', WEBHOOK_RETRY_SCHEDULE: '1h', DELIVERY_METRICS_PORT: String(await freePort()) },
      { apps: ['api', 'delivery'] },
    );
    emitter = await Emitter.connect(system);
    hung = await new HungReceiver().start();
  });
  afterAll(async () => {
    await hung?.stop();
    await emitter?.close();
    await system?.stop();
  });

  const metrics = (): Promise<Record<string, number>> => scrapeMetrics(`http://127.0.0.1:${system.env.DELIVERY_METRICS_PORT}/metrics`);
  const held = async (): Promise<number> => (await metrics())['delivery_webhook_held{path="queue"}'] ?? 0;
  const consumer = async (): Promise<ConsumerInfo> => (await emitter.nc.jetstreamManager()).consumers.info(new Names(system.natsPrefix).deliveriesStream, 'webhook-sender');
  const emitMany = async (src: string, owner: string, n: number): Promise<void> => {
    for (let i = 0; i < n; i += 500) await Promise.all(Array.from({ length: Math.min(500, n - i) }, (_, j) => emitter.emit(src, owner, { i: i + j })));
  };

  it("parks the excess in webhook_retries and acks it, so the consumer holds no more than the replica, and delivers each once", async () => {
    const a = createUser(system);
    const b = createUser(system);
    const [srcA, srcB] = [await insertSource(system, a.id), await insertSource(system, b.id)];
    const port = new URL(hung.url).port;
    const whA = (await client(system, a.apiKey).post('/webhooks', { url: `http://127.0.0.2:${port}/hook` })).body.data.id;
    expect((await client(system, a.apiKey).post('/subscriptions', { emitter_id: srcA, listener_id: whA })).status).toBe(200);
    for (let i = 0; i < B_WEBHOOKS; i++) {
      const wh = (await client(system, b.apiKey).post('/webhooks', { url: `http://127.0.0.${i + 3}:${port}/hook` })).body.data.id;
      expect((await client(system, b.apiKey).post('/subscriptions', { emitter_id: srcB, listener_id: wh })).status).toBe(200);
    }
    await subscriptionsLoaded(system);

    // Each webhook fails once: for the next minute their events go through DELIVERIES.
    await emitter.emit(srcA, a.id, { prime: true });
    await emitter.emit(srcB, b.id, { prime: true });
    await eventually(async () => hung.received.length === 1 + B_WEBHOOKS, { what: 'the failed first attempts' });

    await emitMany(srcA, a.id, A_EVENTS);
    await eventually(async () => (await held()) >= 7_500, { what: "A's deliveries held", timeoutMs: 60_000 });
    // A's webhook makes no progress for longer than a slow request (5 s): its lane is slow.
    await new Promise((r) => setTimeout(r, 6_000));
    await emitMany(srcB, b.id, B_EVENTS);

    // B's deliveries bring the replica to its bound: A's lane keeps 1,000, the rest is pushed back for up to 30 s.
    await eventually(async () => ((await metrics())['delivery_webhook_routes_total{path="queue"}'] ?? 0) >= A_EVENTS + B_WEBHOOKS * B_EVENTS, { what: "B's deliveries queued", timeoutMs: 30_000 });
    await eventually(async () => (await consumer()).num_pending === 0, { what: 'every queued delivery handed out', timeoutMs: 30_000 });
    // Parked and acknowledged, not nak'd: the consumer's pending messages fall back to what the replica holds
    // (a nak'd excess stayed among them for at least 24 s).
    await eventually(async () => (await consumer()).num_ack_pending <= HELD_MAX, { what: "the consumer's pending messages back under the bound", timeoutMs: 15_000 });
    expect((await metrics())['delivery_webhook_held_back_total{reason="slow"}']).toBeGreaterThan(0);
    const parked = (await sql<{ n: number }>(system, `select count(*)::int as n from webhook_retries where webhook_id = $1 and message::jsonb ? 'heldBack'`, [whA]))[0].n;
    expect(parked).toBeGreaterThan(0);
    for (let i = 0; i < 5; i++) {
      expect((await consumer()).num_ack_pending).toBeLessThanOrEqual(HELD_MAX);
      await new Promise((r) => setTimeout(r, 400));
    }

    // Once the receivers answer, each delivery arrives once: none pushed back was lost (parked ones are due
    // up to 36 s later).
    hung.release();
    const total = (1 + A_EVENTS) + B_WEBHOOKS * (1 + B_EVENTS);
    await eventually(async () => hung.deliveries().size === total, { what: `all ${total} deliveries`, timeoutMs: 120_000 });
    expect(hung.received.length).toBe(total + 1 + B_WEBHOOKS); // each webhook's failed first attempt, then each event once
  });
});
