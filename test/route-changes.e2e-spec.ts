import { client, createUser } from './support/accounts';
import { scrapeMetrics } from './support/metrics';
import { eventually, freePort, startSystem, System } from './support/system';
import { Emitter, insertSource, Receiver, sql, subscriptionsLoaded } from './events.helpers';

/** Subscriptions of a throwaway account, inserted directly: every full read of the routes reads them all. */
const BULK = 100_000;

/**
 * The delivery app reads again only the routes a change names (a subscription's emitter, a webhook, a deleted
 * source), and routing waits only for the changes announced before it. Before, every change read every route
 * (seconds with hundreds of thousands of subscriptions) and routing waited for the reads of every change
 * announced meanwhile too: one account changing its subscriptions in a loop held up every account's events.
 */
describe('route changes', () => {
  let system: System;
  let emitter: Emitter;
  let receiver: Receiver;
  let control: Receiver;
  let metricsUrl: string;

  beforeAll(async () => {
    const port = await freePort();
    system = await startSystem({ DELIVERY_METRICS_PORT: String(port) }, { apps: ['api', 'delivery'] });
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
    emitter = await Emitter.connect(system);
    receiver = await new Receiver().start();
    control = await new Receiver().start();
  });
  afterAll(async () => {
    await control?.stop();
    await receiver?.stop();
    await emitter?.close();
    await system?.stop();
  });

  const reads = async (): Promise<{ all: number; changed: number }> => {
    const m = await scrapeMetrics(metricsUrl);
    return { all: m['delivery_route_reads_total{scope="all"}'] ?? 0, changed: m['delivery_route_reads_total{scope="changed"}'] ?? 0 };
  };
  const got = (r: Receiver, eventId: string): number => r.received.filter((x) => x.headers['x-pd-event-id'] === eventId).length;

  it('follows each change at once, reading only the routes it names', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const src = await insertSource(system, user.id);
    const other = await insertSource(system, user.id);
    const controlHook: string = (await api.post('/webhooks', { url: control.url })).body.data.id;
    const hook: string = (await api.post('/webhooks', { url: receiver.url })).body.data.id;
    expect((await api.post('/subscriptions', { emitter_id: src, listener_id: controlHook })).status).toBe(200);
    expect((await api.post('/subscriptions', { emitter_id: other, listener_id: controlHook })).status).toBe(200);
    await subscriptionsLoaded(system);
    const before = await reads();

    /**
     * Emits from `from`: the webhook gets it (once), or not — then nothing has come for it 300 ms after the control
     * webhook, subscribed to the same emitter, got the event.
     */
    const hookGets = async (from: string, expected: boolean): Promise<void> => {
      const ev = await emitter.emit(from, user.id, { step: true });
      if (expected) await eventually(async () => got(receiver, ev.id) > 0, { what: `event ${ev.id} at the webhook` });
      await eventually(async () => got(control, ev.id) > 0, { what: `event ${ev.id} at the control webhook` });
      await new Promise((r) => setTimeout(r, 300));
      expect(got(receiver, ev.id)).toBe(expected ? 1 : 0);
    };

    await hookGets(src, false);
    expect((await api.post('/subscriptions', { emitter_id: src, listener_id: hook })).status).toBe(200);
    await hookGets(src, true);
    expect((await api.put(`/webhooks/${hook}`, { active: false })).status).toBe(200);
    await hookGets(src, false);
    expect((await api.put(`/webhooks/${hook}`, { active: true })).status).toBe(200);
    await hookGets(src, true);
    expect((await api.del(`/subscriptions?emitter_id=${src}&listener_id=${hook}&event_name=`)).status).toBe(204);
    await hookGets(src, false);
    // A glob: every source of the account, the one without a subscription of its own too.
    expect((await api.post('/subscriptions', { emitter_id: 'dc_*', listener_id: hook })).status).toBe(200);
    await hookGets(other, true);
    await hookGets(src, true);
    expect((await api.del(`/webhooks/${hook}`)).status).toBe(204);
    await hookGets(src, false);
    await subscriptionsLoaded(system);

    const after = await reads();
    expect(after.changed - before.changed).toBeGreaterThanOrEqual(6);
    // Six changes, none of them a full read (the safety net may have run once meanwhile: it runs every 30 s).
    expect(after.all - before.all).toBeLessThanOrEqual(1);
  });

  it("delivers one account's events while another changes its subscriptions and webhooks in a loop", async () => {
    const attacker = createUser(system);
    const hostile = client(system, attacker.apiKey);
    const bulkHook: string = (await hostile.post('/webhooks', { url: 'https://hooks.example.com/bulk' })).body.data.id;
    await sql(system, `insert into subscriptions (id, owner_id, emitter_id, listener_id, event_name, created_at_ms, created_at)
      select 'sub_bulk' || i, $1, 'dc_bulk' || i, $2, '', 0, 0 from generate_series(1, ${BULK}) i`, [attacker.id, bulkHook]);
    const own = await insertSource(system, attacker.id);
    let stop = false;
    let changes = 0;
    const loop = async (): Promise<void> => {
      while (!stop) {
        const wh: string = (await hostile.post('/webhooks', { url: 'https://hooks.example.com/x' })).body.data.id;
        await hostile.post('/subscriptions', { emitter_id: own, listener_id: wh });
        await hostile.post('/subscriptions', { emitter_id: 'dc_*', listener_id: wh });
        await hostile.del(`/subscriptions?emitter_id=${own}&listener_id=${wh}&event_name=`);
        await hostile.del(`/webhooks/${wh}`);
        changes += 5;
      }
    };
    const readsBefore = await reads();
    const attack = Promise.all(Array.from({ length: 8 }, loop));
    try {
      await eventually(async () => changes >= 40, { what: 'the loop of changes under way' });
      const victim = createUser(system);
      const api = client(system, victim.apiKey);
      const src = await insertSource(system, victim.id);
      const wh: string = (await api.post('/webhooks', { url: receiver.url })).body.data.id;
      expect((await api.post('/subscriptions', { emitter_id: src, listener_id: wh })).status).toBe(200);
      const sent = await Promise.all(Array.from({ length: 20 }, (_, i) => emitter.emit(src, victim.id, { i })));
      const arrived = (): number => sent.filter((e) => got(receiver, e.id) > 0).length;
      // The loop goes on until they arrive (or the wait gives up): they must arrive while it runs.
      await eventually(async () => arrived() === sent.length, { what: 'the events delivered during the loop', timeoutMs: 60_000, intervalMs: 100 });
      const { changed, all } = await reads();
      process.stdout.write(`route changes: ${sent.length} events delivered while another account made ${changes} route changes over ${BULK} subscriptions (${changed - readsBefore.changed} reads of changed routes, ${all - readsBefore.all} full)\n`);
    } finally {
      stop = true;
      await attack;
    }
  });
});
