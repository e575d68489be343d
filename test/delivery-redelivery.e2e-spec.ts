import { randomBytes } from 'node:crypto';
import { connect, NatsConnection } from 'nats';
import { DeliveryMessage, EmittedEvent, encodeJson, Names } from '@app/contracts';
import { client, createUser } from './support/accounts';
import { natsAdmin } from './support/env';
import { eventually, freePort, startSystem, System } from './support/system';
import { Emitter, insertSource, Receiver, sql, subscriptionsLoaded } from './events.helpers';
import { scrapeMetrics } from './support/metrics';
import { withOrm } from '@app/db';
import { ATTEMPTS_SO_FAR_SQL, AttemptStatus, DeliveryLog } from '../apps/delivery/src/webhooks-out/delivery-log';

/** Issue 10: a metric of waiting webhook retries, and no second POST for a delivery whose success is on record. */
describe('delivery: waiting-retry metrics and redelivered messages', () => {
  let system: System;
  let emitter: Emitter;
  let nc: NatsConnection;
  let receiver: Receiver;

  beforeAll(async () => {
    system = await startSystem(
      { WEBHOOK_RETRY_SCHEDULE: '1h', WEBHOOK_TIMEOUT_MS: '1000', DELIVERY_ACK_WAIT_MS: '2000', DELIVERY_METRICS_PORT: String(await freePort()) },
      { apps: ['api', 'delivery'] },
    );
    emitter = await Emitter.connect(system);
    nc = await connect(natsAdmin());
    receiver = await new Receiver().start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await emitter?.close();
    await nc?.close();
    await system?.stop();
  });

  const metrics = async (): Promise<Record<string, number>> => {
    const all = await scrapeMetrics(`http://127.0.0.1:${system.env.DELIVERY_METRICS_PORT}/metrics`);
    return Object.fromEntries(Object.entries(all).filter(([series]) => series.startsWith('delivery_webhook_retries_')));
  };

  it('reports how many webhook retries wait and how old the oldest is', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const src = await insertSource(system, user.id);
    const down = await new Receiver().start();
    down.respond = () => ({ status: 503 });
    try {
      const wh = (await api.post('/webhooks', { url: down.url })).body.data.id;
      await api.post('/subscriptions', { emitter_id: src, listener_id: wh });
      await subscriptionsLoaded(system);
      expect(await metrics()).toEqual({ delivery_webhook_retries_waiting: 0, delivery_webhook_retries_oldest_age_seconds: 0 });
      const firstFailure = Date.now();
      for (let i = 0; i < 3; i++) await emitter.emit(src, user.id, { i });
      const m = await eventually(async () => {
        const x = await metrics();
        return x.delivery_webhook_retries_waiting === 3 ? x : undefined;
      }, { what: '3 waiting retries in the metrics' });
      // The age counts from the first failed attempt, which came after the first emit.
      expect(m.delivery_webhook_retries_oldest_age_seconds).toBeGreaterThan(0);
      expect(m.delivery_webhook_retries_oldest_age_seconds).toBeLessThanOrEqual((Date.now() - firstFailure) / 1000);
      // Deleting the webhook drops its retries.
      expect((await api.del(`/webhooks/${wh}`)).status).toBe(204);
      await eventually(async () => {
        const x = await metrics();
        return x.delivery_webhook_retries_waiting === 0 && x.delivery_webhook_retries_oldest_age_seconds === 0;
      }, { what: 'no waiting retries after the delete' });
    } finally {
      await down.stop();
    }
  });

  it('does not POST again a redelivered message whose success was recorded (its ack was lost); posts one without', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const src = await insertSource(system, user.id);
    const wh = (await api.post('/webhooks', { url: receiver.url })).body.data.id;
    const sub = (await api.post('/subscriptions', { emitter_id: src, listener_id: wh })).body.data.id;
    await subscriptionsLoaded(system);
    const names = new Names(system.natsPrefix);
    const event = (n: number): EmittedEvent => ({ id: `${Date.now()}-${n}`, emitterId: src, ownerId: user.id, name: '', event: { n }, emitId: `emit_${randomBytes(6).toString('hex')}`, ts: Date.now(), emittedAtMs: Date.now() });
    const [delivered, lost] = [event(1), event(2)];

    // The delivery app is away while two messages are taken from its consumer and never acked, as by a replica that died.
    await system.stopApp('delivery');
    const js = nc.jetstream();
    for (const ev of [delivered, lost]) {
      const msg: DeliveryMessage = { webhookId: wh, subscriptionId: sub, event: ev };
      await js.publish(names.delivery(wh), encodeJson(msg), { msgID: `${sub}:${ev.emitterId}:${ev.id}` });
    }
    const consumer = await js.consumers.get(names.deliveriesStream, 'webhook-sender');
    for (let i = 0; i < 2; i++) expect(await consumer.next({ expires: 5000 })).not.toBeNull();
    // That replica had delivered the first one and recorded the success; its ack never reached the stream.
    await sql(system, `insert into webhook_deliveries (id, webhook_id, event_id, emitter_id, attempt, status, response_code, created_at_ms) values ($1, $2, $3, $4, 1, 'succeeded', 200, $5)`, [`whd_${randomBytes(6).toString('hex')}`, wh, delivered.id, src, Date.now()]);

    await system.startApp('delivery', 'delivery-2');
    await eventually(async () => receiver.eventIds().has(lost.id), { what: 'the message without a recorded success to be delivered', timeoutMs: 30_000 });
    const jsm = await nc.jetstreamManager({ checkAPI: false }); // no account-info round trip: the JetStream API can answer 503 for a moment under a loaded run
    await eventually(async () => {
      const info = await jsm.consumers.info(names.deliveriesStream, 'webhook-sender');
      return info.num_ack_pending === 0 && info.num_pending === 0;
    }, { what: 'both messages acknowledged' });
    expect(receiver.eventIds().has(delivered.id)).toBe(false);
    const rows = await sql<{ event_id: string; attempt: number; status: string }>(system, `select event_id, attempt, status from webhook_deliveries where webhook_id = $1 order by event_id, attempt`, [wh]);
    expect(rows).toEqual(expect.arrayContaining([{ event_id: delivered.id, attempt: 1, status: 'succeeded' }]));
    await eventually(async () => (await sql(system, `select 1 from webhook_deliveries where webhook_id = $1 and event_id = $2 and status = 'succeeded'`, [wh, lost.id])).length === 1, { what: 'the second delivery recorded' });
    const m = await (await fetch(`http://127.0.0.1:${system.env.DELIVERY_METRICS_PORT}/metrics`)).text();
    expect(m).toMatch(/^delivery_webhook_attempts_total\{outcome="already_delivered"\} 1$/m);
  });

  it('looks up a redelivered event\'s attempts through an index, not by reading the webhook\'s whole log', async () => {
    // A webhook with 100,000 attempts on record, as after some minutes at 1,000 events/s: every event a crashed
    // replica held is looked up on redelivery, and a scan of the webhook's rows took 110 ms each at a million.
    const wh = `wh_${randomBytes(6).toString('hex')}`;
    await sql(system, `insert into webhook_deliveries (id, webhook_id, event_id, emitter_id, attempt, status, response_code, created_at_ms)
      select 'whd_' || $1 || g, $1, lpad(g::text, 16, '0'), 'dc_x', 1, 'succeeded', 200, $2::bigint + g from generate_series(1, 100000) g`, [wh, Date.now()]);
    await sql(system, 'analyze webhook_deliveries');
    // The app's query, its `?` placeholders numbered for pg.
    let n = 0;
    const query = ATTEMPTS_SO_FAR_SQL.replace(/\?/g, () => `$${++n}`);
    const [{ 'QUERY PLAN': plan }] = await sql<{ 'QUERY PLAN': unknown }>(system, `explain (format json) ${query}`, [wh, '0000000000050000', 'dc_x']);
    expect(JSON.stringify(plan)).toContain('"Index Name":"webhook_deliveries_webhook_id_event_id_index"');
    const [row] = await sql(system, query, [wh, '0000000000050000', 'dc_x']);
    expect(row).toEqual({ n: 1, ok: true });
    await sql(system, 'delete from webhook_deliveries where webhook_id = $1', [wh]);
  });

  it('prunes attempt rows older than the cut-off, webhook by webhook, those of a deleted webhook too', async () => {
    const now = Date.now();
    const hooks = ['a', 'b', 'c'].map((k) => `wh_prune_${k}_${randomBytes(4).toString('hex')}`);
    // Each webhook: 50 rows an hour old and 50 a minute old. None has a webhooks row: the prune finds the webhooks in
    // the attempt rows themselves, so rows left by a webhook whose owner went are pruned too.
    await sql(system, `insert into webhook_deliveries (id, webhook_id, event_id, emitter_id, attempt, status, created_at_ms)
      select 'whd_' || h || '_' || g, h, g::text, 'dc_x', 1, 'succeeded', case when g <= 50 then $2::bigint - 3600000 else $2::bigint - 60000 end
      from unnest($1::text[]) h, generate_series(1, 100) g`, [hooks, now]);
    await withOrm(system.databaseUrl, (orm) => new DeliveryLog(orm.em).prune(now - 600_000));
    const left = await sql<{ webhook_id: string; n: number; oldest: string }>(system, `select webhook_id, count(*)::int as n, min(created_at_ms)::text as oldest from webhook_deliveries where webhook_id = any($1) group by webhook_id order by webhook_id`, [hooks]);
    expect(left).toEqual([...hooks].sort().map((h) => ({ webhook_id: h, n: 50, oldest: String(now - 60_000) })));
    await sql(system, 'delete from webhook_deliveries where webhook_id = any($1)', [hooks]);
  });

  it("keeps each webhook's newest WEBHOOK_DELIVERIES_RETENTION attempt rows, however recent the others", async () => {
    // One account's healthy webhooks log thousands of attempts a second; kept 7 days, they filled the shared Postgres.
    const now = Date.now();
    const hooks = ['a', 'b'].map((k) => `wh_keep_${k}_${randomBytes(4).toString('hex')}`);
    // a: 120 rows a minute old (several in one millisecond), b: 20.
    await sql(system, `insert into webhook_deliveries (id, webhook_id, event_id, emitter_id, attempt, status, created_at_ms)
      select 'whd_' || h || '_' || lpad(g::text, 4, '0'), h, g::text, 'dc_x', 1, 'succeeded', $2::bigint - 60000 + g / 3
      from unnest($1::text[]) h, generate_series(1, 120) g where h = $1[1] or g <= 20`, [hooks, now]);
    await withOrm(system.databaseUrl, (orm) => new DeliveryLog(orm.em).prune(now - 600_000, 50));
    const left = await sql<{ webhook_id: string; n: number; oldest: string }>(system, `select webhook_id, count(*)::int as n, min(event_id::int)::text as oldest from webhook_deliveries where webhook_id = any($1) group by webhook_id order by webhook_id`, [hooks]);
    expect(left).toEqual([{ webhook_id: hooks[0], n: 50, oldest: '71' }, { webhook_id: hooks[1], n: 20, oldest: '1' }]);
    await sql(system, 'delete from webhook_deliveries where webhook_id = any($1)', [hooks]);
  });

  it('commits a failed attempt\'s row waiting for its flush and successes without (unless told), and flush writes what waits', async () => {
    // A column whose default records, inside each insert's own transaction, whether that commit waits for its flush
    // (this suite's own database; dropped again at the end).
    await sql(system, `alter table webhook_deliveries add column commit_mode text default current_setting('synchronous_commit')`);
    const wh = `wh_log_${randomBytes(4).toString('hex')}`;
    const attempt = (n: number, status: AttemptStatus) => ({ webhookId: wh, eventId: `e${n}`, emitterId: 'dc_x', attempt: 1, status, responseCode: status === 'succeeded' ? 200 : 500 });
    const rows = () => sql<{ status: string; commit_mode: string; n: number }>(system, `select status, commit_mode, count(*)::int as n from webhook_deliveries where webhook_id = $1 group by 1, 2 order by 1, 2`, [wh]);
    try {
      await withOrm(system.databaseUrl, async (orm) => {
        const log = new DeliveryLog(orm.em, true);
        const successes = Array.from({ length: 300 }, (_, i) => log.record(attempt(i, 'succeeded')));
        await log.record(attempt(300, 'failed'));
        expect(await rows()).toEqual(expect.arrayContaining([{ status: 'failed', commit_mode: 'on', n: 1 }]));
        await log.flush();
        expect(await rows()).toEqual([{ status: 'failed', commit_mode: 'on', n: 1 }, { status: 'succeeded', commit_mode: 'off', n: 300 }]);
        await Promise.all(successes);
        // DELIVERY_LOG_ASYNC_COMMIT=false: successes wait for their flush too.
        await sql(system, 'delete from webhook_deliveries where webhook_id = $1', [wh]);
        await new DeliveryLog(orm.em, false).record(attempt(301, 'succeeded'));
        expect(await rows()).toEqual([{ status: 'succeeded', commit_mode: 'on', n: 1 }]);
      });
    } finally {
      await sql(system, 'delete from webhook_deliveries where webhook_id = $1', [wh]);
      await sql(system, 'alter table webhook_deliveries drop column commit_mode');
    }
  });
});
