import { connect, NatsConnection } from 'nats';
import { Client } from 'pg';
import { natsAdmin } from './support/env';
import { Names } from '@app/contracts';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { receiversOfBlock, wireWebhook } from './support/webhook-receivers';
import { Emitter, Receiver, sql, subscriptionsLoaded } from './events.helpers';

type Api = ReturnType<typeof client>;

/**
 * The durable retry queue: failed attempts wait in `webhook_retries`, not on
 * the DELIVERIES consumer. Retries are an hour apart here, so anything that
 * arrives sooner than that came through the queue's catch-up or Retry-After;
 * the consumer may hold only 20 messages, so a dead endpoint whose retries
 * stayed on the consumer would stop every webhook.
 */
describe('webhook retry queue: bounded consumer, catch-up, attempts', () => {
  let system: System;
  let emitter: Emitter;
  let user: TestUser;
  let api: Api;
  let nc: NatsConnection;

  const receiver = receiversOfBlock();

  beforeAll(async () => {
    system = await startSystem(
      { WEBHOOK_RETRY_SCHEDULE: '1h,1h', WEBHOOK_MAX_ACK_PENDING: '20', WEBHOOK_TIMEOUT_MS: '2000', DELIVERY_ACK_WAIT_MS: '3000', DELIVERY_METRICS_PORT: String(await freePort()) },
      { apps: ['api', 'delivery'] },
    );
    emitter = await Emitter.connect(system);
    nc = await connect(natsAdmin());
    user = createUser(system);
    api = client(system, user.apiKey);
  });
  afterAll(async () => {
    await emitter?.close();
    await nc?.close();
    await system?.stop();
  });

  const wire = (r: Receiver) => wireWebhook(system, user, r);
  const deliveries = async (wh: string): Promise<Array<Record<string, unknown>>> => (await api.get(`/webhooks/${wh}/deliveries?limit=100`)).body.data;
  const waiting = async (wh: string): Promise<number> =>
    (await sql<{ n: number }>(system, `select count(*)::int as n from webhook_retries where webhook_id = $1`, [wh]))[0].n;
  const consumerPending = async (): Promise<number> => {
    const info = await (await nc.jetstreamManager()).consumers.info(new Names(system.natsPrefix).deliveriesStream, 'webhook-sender');
    return info.num_ack_pending;
  };

  it('a dead endpoint with more failed events than the consumer may hold does not stop deliveries to another webhook', async () => {
    const dead = await receiver();
    dead.respond = () => ({ status: 503 });
    const d = await wire(dead);
    for (let i = 0; i < 60; i++) await emitter.emit(d.src, user.id, { i });
    await eventually(async () => (await waiting(d.wh)) === 60, { what: '60 retries waiting in the queue' });
    expect(dead.received.length).toBe(60); // one attempt each: the next is an hour away
    expect(await consumerPending()).toBeLessThan(20);

    const fast = await receiver();
    const f = await wire(fast);
    for (let i = 0; i < 30; i++) await emitter.emit(f.src, user.id, { i });
    await eventually(async () => fast.ids().size === 30, { what: 'all events at the healthy endpoint' });

    // Each failed attempt is in the delivery log with its next attempt time.
    const log = await deliveries(d.wh);
    expect(log).toHaveLength(60);
    for (const a of log) {
      expect(a).toEqual(expect.objectContaining({ attempt: 1, status: 'failed', response_code: 503 }));
      expect(Number(a.next_attempt_at_ms) - Number(a.created_at_ms)).toBeGreaterThan(0.75 * 3_600_000);
    }

    // Deleting the webhook removes its waiting retries.
    expect((await api.del(`/webhooks/${d.wh}`)).status).toBe(204);
    expect(await waiting(d.wh)).toBe(0);
  });

  it('an endpoint that comes back gets its backlog promptly after its first success (catch-up, more than one batch)', async () => {
    const r = await receiver();
    let down = true;
    const ok = new Set<string>();
    r.respond = (req) => {
      if (down) return { status: 503 };
      ok.add(String(req.headers['x-pd-event-id']));
      return { status: 200 };
    };
    const { src, wh } = await wire(r);
    // More than one catch-up batch (1,000), so the batches after the first must follow by themselves.
    const total = 1100;
    const backlog: string[] = [];
    for (let i = 0; i < total; i += 50) backlog.push(...(await Promise.all(Array.from({ length: 50 }, (_, j) => emitter.emit(src, user.id, { i: i + j })))).map((e) => e.id));
    await eventually(async () => (await waiting(wh)) === total, { what: 'the backlog waiting an hour' });

    down = false;
    const fresh = await emitter.emit(src, user.id, { back: true });
    // The next scheduled attempt is an hour away: only the catch-up after the fresh event's success explains this.
    await eventually(async () => [fresh.id, ...backlog].every((id) => ok.has(id)), { what: 'the whole backlog delivered after the endpoint came back' });
    await eventually(async () => (await waiting(wh)) === 0, { what: 'the queue emptied' });
    // The backlog's successes are their second attempts: the count carried over through the queue.
    const counts = async (): Promise<Array<{ attempt: number; status: string; n: number }>> =>
      sql(system, `select attempt, status, count(*)::int as n from webhook_deliveries where webhook_id = $1 group by attempt, status order by attempt, status`, [wh]);
    await eventually(async () => (await counts()).find((c) => c.attempt === 2)?.n === total, { what: 'every second attempt logged' });
    expect(await counts()).toEqual([
      { attempt: 1, status: 'failed', n: total },
      { attempt: 1, status: 'succeeded', n: 1 },
      { attempt: 2, status: 'succeeded', n: total },
    ]);
  });

  it('counts attempts through the queue and exhausts them at the end of the schedule', async () => {
    const r = await receiver();
    // Retry-After: 0 makes each retry due at once, so the three attempts (the first and the schedule's two) happen now.
    r.respond = () => ({ status: 503, headers: { 'retry-after': '0' } });
    const { src, wh } = await wire(r);
    // Keys out of order, nested, and a U+0000: every attempt's body is the emitted JSON byte for byte (a jsonb column would reorder the keys).
    const data = { zeta: 1, alpha: [2, { y: 1, b: 2 }], doomed: true, nul: 'a\u0000b' };
    const ev = await emitter.emit(src, user.id, data);
    await eventually(async () => (await deliveries(wh)).some((a) => a.status === 'exhausted'), { what: 'exhausted attempts' });
    const log = (await deliveries(wh)).reverse();
    expect(log.map((a) => [a.attempt, a.status])).toEqual([[1, 'failed'], [2, 'failed'], [3, 'exhausted']]);
    expect(log[0].next_attempt_at_ms).toEqual(expect.any(Number));
    expect(log[2].next_attempt_at_ms).toBeNull();
    expect(r.received.every((x) => x.headers['webhook-id'] === ev.id)).toBe(true);
    expect(r.received.map((x) => x.body)).toEqual(Array(r.received.length).fill(JSON.stringify(data)));
    expect(await waiting(wh)).toBe(0);
    // The exhausted message left the consumer (not redelivered after the 3 s ack wait, so no fourth attempt).
    await eventually(async () => (await consumerPending()) === 0, { what: 'the exhausted message off the consumer' });
    expect(r.received).toHaveLength(3);
  });

  it('an endpoint answering 410 disables the webhook and removes its waiting retries', async () => {
    const r = await receiver();
    r.respond = (_req, n) => (n <= 5 ? { status: 500 } : { status: 410 });
    const { src, wh } = await wire(r);
    for (let i = 0; i < 5; i++) await emitter.emit(src, user.id, { i });
    await eventually(async () => (await waiting(wh)) === 5, { what: 'five retries waiting' });
    await emitter.emit(src, user.id, { gone: true });
    await eventually(async () => (await api.get(`/webhooks/${wh}`)).body.data.active === false, { what: 'webhook disabled' });
    await eventually(async () => (await waiting(wh)) === 0, { what: 'waiting retries removed' });
    await eventually(async () => (await consumerPending()) === 0, { what: 'the 410 message off the consumer' });
  });

  it("takes due retries fairly across accounts: another account's due retries are attempted in the same round as the first of an account's 3,000", async () => {
    const r = await receiver();
    r.respond = (_req, n) => (n <= 2 ? { status: 503 } : { status: 200 });
    const { src, wh } = await wire(r);
    const events = [(await emitter.emit(src, user.id, { fair: 1 })).id, (await emitter.emit(src, user.id, { fair: 2 })).id];
    await eventually(async () => (await waiting(wh)) === 2, { what: "the other account's two retries waiting an hour" });
    // A failed attempt's retry is written with its webhook's owner.
    expect(await sql(system, `select owner_id from webhook_retries where webhook_id = $1`, [wh])).toEqual([{ owner_id: user.id }, { owner_id: user.id }]);
    const flooder = createUser(system);
    const db = new Client({ connectionString: system.databaseUrl });
    await db.connect();
    try {
      // Which transaction deleted each waiting retry: a poll republishes and deletes one round of due rows in one.
      await db.query(`create table test_retry_rounds (seq serial, owner_id text, event_id text, tx bigint)`);
      await db.query(`create function test_retry_round() returns trigger language plpgsql security definer as $$
        begin insert into test_retry_rounds (owner_id, event_id, tx) values (old.owner_id, old.event_id, txid_current()); return old; end $$`);
      await db.query(`create trigger test_retry_round after delete on webhook_retries for each row execute function test_retry_round()`);
      await db.query('begin');
      // The flooder's 3,000 retries (of a webhook that is gone: each is dropped once republished) all came due before
      // the other account's two; one of those was written before retries had an owner.
      await db.query(
        `insert into webhook_retries (id, webhook_id, owner_id, emitter_id, event_id, attempt, due_at_ms, message, created_at_ms)
         select 'retry_fair_' || i, 'wh_goneeeeeeeeeeeeeeeeeee', $1, 'dc_fair', 'ev_' || i, 2, $2::bigint - 600000 + i,
           json_build_object('webhookId', 'wh_goneeeeeeeeeeeeeeeeeee', 'subscriptionId', 'sub_fair', 'event', json_build_object('id', 'ev_' || i, 'emitterId', 'dc_fair', 'event', i)), $2::bigint
         from generate_series(1, 3000) i`,
        [flooder.id, Date.now()],
      );
      await db.query(`update webhook_retries set due_at_ms = $2, owner_id = case when event_id = $3 then '' else owner_id end where webhook_id = $1`, [wh, Date.now() - 1000, events[1]]);
      await db.query('commit');
      await eventually(async () => events.every((id) => r.received.filter((x) => x.headers['x-pd-event-id'] === id).length === 2), { what: "the other account's second attempts" });
      const rounds = (await db.query(`select owner_id, event_id, tx::text from test_retry_rounds order by seq`)).rows as { owner_id: string; event_id: string; tx: string }[];
      const first = rounds.find((x) => x.owner_id === flooder.id)?.tx;
      expect(first).toBeDefined();
      // Both in the flooder's first round, the one written without an owner given its webhook's.
      const ofOther = rounds.filter((x) => events.includes(x.event_id)).sort((x, y) => events.indexOf(x.event_id) - events.indexOf(y.event_id));
      expect(ofOther).toEqual(events.map((id) => ({ owner_id: user.id, event_id: id, tx: first })));
    } finally {
      await db.query('rollback').catch(() => undefined);
      await db.query(`drop trigger if exists test_retry_round on webhook_retries`).catch(() => undefined);
      await db.end();
    }
  });

  // Last: it replaces the delivery app with two replicas.
  it('waiting retries survive a SIGKILL of the delivery app, and two replicas that never saw the failures catch them up once each', async () => {
    const r = await receiver();
    let down = true;
    r.respond = () => (down ? { status: 503 } : { status: 200 });
    const { src, wh } = await wire(r);
    const backlog: string[] = [];
    for (let i = 0; i < 40; i++) backlog.push((await emitter.emit(src, user.id, { i })).id);
    await eventually(async () => (await waiting(wh)) === 40, { what: 'the backlog waiting an hour' });
    await eventually(async () => (await consumerPending()) === 0, { what: 'every failed message acked' });

    await system.stopApp('delivery', 'SIGKILL');
    await system.startApp('delivery', 'delivery-a');
    await system.startApp('delivery', 'delivery-b', { DELIVERY_METRICS_PORT: '0' });
    await subscriptionsLoaded(system);
    expect(await waiting(wh)).toBe(40);

    down = false;
    const fresh = await emitter.emit(src, user.id, { back: true });
    await eventually(async () => [fresh.id, ...backlog].every((id) => r.received.some((x) => x.headers['x-pd-event-id'] === id && r.received.indexOf(x) >= 40)), {
      what: 'the backlog delivered by the new replicas',
    });
    await eventually(async () => (await waiting(wh)) === 0, { what: 'the queue emptied' });
    // Each waiting retry was republished once (row locks shared between the replicas' pollers): 40 failures, then 41 successes.
    await eventually(async () => (await deliveries(wh)).filter((a) => a.status === 'succeeded').length === 41, { what: '41 successes logged' });
    expect(r.received).toHaveLength(81);
    const log = await deliveries(wh);
    expect(new Set(log.filter((a) => a.status === 'succeeded' && a.attempt === 2).map((a) => a.event_id))).toEqual(new Set(backlog));
  });
});
