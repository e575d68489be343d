import { client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { Emitter, insertSource, Receiver, sql, subscriptionsLoaded } from './events.helpers';

describe('delivery app: crash safety', () => {
  let system: System;
  let emitter: Emitter;
  let receiver: Receiver;

  beforeAll(async () => {
    system = await startSystem({ WEBHOOK_RETRY_SCHEDULE: '200ms,500ms,1s,2s', WEBHOOK_TIMEOUT_MS: '2000', DELIVERY_ACK_WAIT_MS: '3000', DELIVERY_METRICS_PORT: String(await freePort()) }, { apps: ['api', 'delivery'] });
    emitter = await Emitter.connect(system);
    receiver = await new Receiver().start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await emitter?.close();
    await system?.stop();
  });

  it('loses nothing when killed with SIGKILL mid-burst: every event arrives (duplicates only by webhook-id) and is indexed', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const src = await insertSource(system, user.id);
    const wh = (await api.post('/webhooks', { url: receiver.url })).body.data.id;
    expect((await api.post('/subscriptions', { emitter_id: src, listener_id: wh })).status).toBe(200);
    await subscriptionsLoaded(system);
    // A receiver slow enough that the burst is still in flight when the app dies.
    receiver.respond = () => new Promise((r) => setTimeout(() => r({ status: 200 }), 5));
    const total = 600;
    const sent: string[] = [];
    const publishing = (async () => {
      for (let i = 0; i < total; i += 50) {
        const batch = await Promise.all(Array.from({ length: 50 }, (_, j) => emitter.emit(src, user.id, { i: i + j })));
        sent.push(...batch.map((e) => e.id));
      }
    })();
    await eventually(async () => receiver.received.length >= 60, { what: 'the burst to start arriving' });
    await system.stopApp('delivery', 'SIGKILL');
    const atKill = receiver.received.length;
    await publishing;
    await system.startApp('delivery', 'delivery-restarted');
    await eventually(async () => receiver.ids().size === total, { what: `all ${total} events delivered after the restart`, timeoutMs: 60_000, intervalMs: 250 });
    expect([...receiver.ids()].sort()).toEqual(sent.map((id) => `${src}:${id}`).sort());
    const duplicates = receiver.received.length - total;
    process.stdout.write(`delivery crash test: ${total} events, ${atKill} received before SIGKILL, ${receiver.received.length} requests in all, ${duplicates} duplicates (same webhook-id)\n`);
    const newest = [...sent].sort((a, b) => {
      const [am, as] = a.split('-').map(Number);
      const [bm, bs] = b.split('-').map(Number);
      return bm - am || bs - as;
    })[0];
    const summaries = await eventually(async () => {
      const r = await api.get(`/sources/${src}/event_summaries?limit=1`);
      return r.body?.data?.[0]?.id === newest ? r.body : undefined;
    }, { what: 'the newest event indexed' });
    expect(summaries.page_info.total_count).toBe(100);
    // The spec's figures: a page of 10 by default, the last 100 retrievable.
    const byDefault = (await api.get(`/sources/${src}/event_summaries`)).body;
    expect({ count: byDefault.page_info.count, total: byDefault.page_info.total_count, n: byDefault.data.length, newest: byDefault.data[0].id }).toEqual({ count: 10, total: 100, n: 10, newest });
    expect((await api.get(`/sources/${src}/event_summaries?limit=100`)).body.data).toHaveLength(100);
    // Attempt rows of successes are written after the ack, so a SIGKILL may lose a few rows (never an event).
    const [{ n }] = await sql<{ n: number }>(system, `select count(distinct event_id)::int as n from webhook_deliveries where webhook_id = $1 and status = 'succeeded'`, [wh]);
    expect(n).toBeGreaterThan(total / 2);
  });
});

describe('delivery app: outbound address policy', () => {
  let system: System;
  let emitter: Emitter;
  let receiver: Receiver;

  beforeAll(async () => {
    system = await startSystem({ ALLOW_LOOPBACK: 'false', WEBHOOK_RETRY_SCHEDULE: '100ms', DELIVERY_METRICS_PORT: String(await freePort()) }, { apps: ['api', 'delivery'] });
    emitter = await Emitter.connect(system);
    receiver = await new Receiver().start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await emitter?.close();
    await system?.stop();
  });

  it('refuses loopback (by address and by name) unless allowed, and metadata addresses always', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const port = new URL(receiver.url).port;
    const metadata = 'http://169.254.169.254/latest/meta-data';
    const targets = [receiver.url, `http://localhost:${port}/hook`, metadata];
    const hooks: string[] = [];
    for (const url of targets) {
      const src = await insertSource(system, user.id);
      // A literal metadata address is refused when the webhook is made (below); one saved before that rule is refused at delivery.
      const wh = (await api.post('/webhooks', { url: url === metadata ? 'https://example.com/hook' : url })).body.data.id;
      if (url === metadata) {
        await sql(system, `update webhooks set url = $1, url_sealed = null where id = $2`, [url, wh]);
        // A change through the api (its url left out) tells delivery to read the webhook again, as it is stored now.
        expect((await api.put(`/webhooks/${wh}`, { name: 'saved before the rule' })).body.data.url).toBe(metadata);
      }
      hooks.push(wh);
      await api.post('/subscriptions', { emitter_id: src, listener_id: wh });
      await subscriptionsLoaded(system);
      await emitter.emit(src, user.id, { probe: url });
    }
    for (const [i, wh] of hooks.entries()) {
      const log = await eventually(async () => {
        const d = (await api.get(`/webhooks/${wh}/deliveries`)).body.data;
        return d.some((x: { status: string }) => x.status === 'exhausted') ? d : undefined;
      }, { what: `attempts to ${targets[i]} exhausted` });
      expect(log.every((x: { response_code: number | null }) => x.response_code === null)).toBe(true);
      expect(log[0].error).toMatch(i === 2 ? /always refused/ : /loopback address \(allowed only with ALLOW_LOOPBACK=true\)/);
    }
    expect(receiver.received.length).toBe(0);
  });

  it('refuses a literal address no setting would deliver to when the webhook is made or changed, and accepts loopback and private ones', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const never = ['http://169.254.169.254/latest/meta-data', 'http://[fe80::1]/x', 'http://0.0.0.0:8080/', 'http://[::]/', 'http://224.0.0.1/',
      'http://[64:ff9b::169.254.169.254]/', 'http://[::ffff:a9fe:a9fe]/', 'http://2852039166/', 'http://127.0.0.1:4222/', 'http://100.100.100.200/'];
    for (const url of never) {
      const r = await api.post('/webhooks', { url });
      expect({ url, status: r.status, code: r.body.code, details: r.body.details }).toEqual({ url, status: 400, code: 'invalid_request', details: { field: 'url', reason: 'blocked' } });
      expect(r.body.error).toMatch(/^url: .*(always refused|own services).*: no delivery would be made$/);
    }
    const kept = (await api.post('/webhooks', { url: 'http://10.1.2.3/hook' })).body.data;
    expect(kept.url).toBe('http://10.1.2.3/hook');
    expect((await api.post('/webhooks', { url: 'http://127.0.0.1:9/hook' })).status).toBe(200);
    const changed = await api.put(`/webhooks/${kept.id}`, { url: 'http://169.254.169.254/' });
    expect([changed.status, changed.body.details]).toEqual([400, { field: 'url', reason: 'blocked' }]);
    expect((await api.get(`/webhooks/${kept.id}`)).body.data.url).toBe('http://10.1.2.3/hook');
    expect((await api.get('/users/me/webhooks')).body.data).toHaveLength(2);
  });
});
