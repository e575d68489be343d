import { client, createUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { eventually, freePort, startSystem, System } from './support/system';
import { Receiver, subscriptionsLoaded } from './events.helpers';
import { scrapeMetrics } from './support/metrics';

const post = (url: string, n: number) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });

/**
 * Back-pressure of HTTP ingress: with no runner to drain INVOCATIONS, the
 * backlog only grows, so the bounds are reached for certain; once a runner
 * starts, everything accepted runs and the endpoints accept again.
 */
describe('HTTP ingress back-pressure (INGEST_MAX_PENDING_PER_SOURCE, INGEST_MAX_PENDING)', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem(
      { HTTP_RATE_PER_SEC: '0', INGEST_MAX_PENDING_PER_SOURCE: '5', INGEST_MAX_PENDING: '8', INGEST_BACKLOG_POLL_MS: '50' },
      { apps: ['api', 'delivery'] },
    );
  });
  afterAll(async () => {
    await system?.stop();
  });

  const health = async () => (await (await fetch(`${system.origin}/healthz`)).json()) as { ingest: Record<string, number> };

  it('answers 429 backlog_full with Retry-After once a source, then the service, has too many invocations waiting; accepted requests all run once a runner drains them', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const urls: string[] = [];
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const created = await api.post('/sources', { component_code: HTTP_SOURCE, name: `bp${i}` });
      expect(created.status).toBe(200);
      urls.push(created.body.data.configured_props.http.endpoint_url);
      ids.push(created.body.data.id);
    }
    const accepted = [0, 0, 0];

    // Source 0 takes 5, then its own bound answers.
    for (let n = 0; n < 5; n++) {
      expect((await post(urls[0], n)).status).toBe(200);
      accepted[0]++;
    }
    await eventually(async () => (await health()).ingest.invocations_pending >= 5, { what: 'the backlog read to reach 5' });
    const refused = await post(urls[0], 99);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await refused.json()).toEqual({
      error: expect.stringContaining('this source has 5 invocations waiting to run (limit 5)'),
      code: 'backlog_full',
      details: { scope: 'source', pending: 5, limit: 5, retry_after_seconds: Number(refused.headers.get('retry-after')) },
    });

    // Another source is not held back by source 0's backlog, until the whole service holds 8.
    for (let n = 0; n < 3; n++) {
      expect((await post(urls[1], n)).status).toBe(200);
      accepted[1]++;
    }
    await eventually(async () => (await health()).ingest.invocations_pending >= 8, { what: 'the backlog read to reach 8' });
    const systemFull = await post(urls[2], 0);
    expect(systemFull.status).toBe(429);
    expect(await systemFull.json()).toMatchObject({ code: 'backlog_full', details: { scope: 'system', pending: 8, limit: 8 } });
    const h = await health();
    expect(h.ingest).toEqual({ invocations_pending: 8, events_unrouted: 0, deliveries_pending: 0, max_pending: 8, max_pending_per_source: 5, max_pending_per_account: 2000, max_pending_deliveries_per_account: 2000, retries_pending: 0, max_retries_per_account: 100000, refused_total: 2 });
    // The same figures for Prometheus, the refusals by scope.
    expect(await scrapeMetrics(`${system.origin}/metrics`)).toMatchObject({
      api_ingest_invocations_pending: 8,
      api_ingest_events_unrouted: 0,
      api_ingest_deliveries_pending: 0,
      'api_ingest_bound{bound="system"}': 8,
      'api_ingest_bound{bound="source"}': 5,
      'api_ingest_bound{bound="account"}': 2000,
      'api_ingest_refused_total{scope="source",waiting="invocations"}': 1,
      'api_ingest_refused_total{scope="system",waiting="invocations"}': 1,
    });

    // A runner drains the backlog: every accepted request becomes an event, and the endpoints accept again.
    await system.startApp('runner', 'runner');
    for (const [i, id] of ids.slice(0, 2).entries()) {
      await eventually(async () => {
        const res = await api.get(`/sources/${id}/event_summaries?limit=100`);
        return res.body.data.length === accepted[i] ? res : undefined;
      }, { what: `source ${i}'s accepted events`, timeoutMs: 60_000 });
    }
    await eventually(async () => (await post(urls[2], 1)).status === 200, { what: 'the endpoint to accept again', timeoutMs: 30_000 });
    expect((await health()).ingest.invocations_pending).toBeLessThan(8);
  });
});

/**
 * Deliveries waiting for an account's webhooks (a receiver that stopped answering) hold back that
 * account's endpoints only; once the receiver answers again, everything accepted arrives.
 */
describe('HTTP ingress back-pressure (INGEST_MAX_PENDING_DELIVERIES_PER_ACCOUNT)', () => {
  let system: System;
  let receiver: Receiver;

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', INGEST_MAX_PENDING_DELIVERIES_PER_ACCOUNT: '10', INGEST_BACKLOG_POLL_MS: '50', WEBHOOK_TIMEOUT_MS: '60000', WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s', DELIVERY_METRICS_PORT: String(await freePort()) });
    receiver = await new Receiver().start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await system?.stop();
  });

  it("answers 429 scope account while the account's webhooks have too many deliveries waiting; other accounts are not held back", async () => {
    const slow = client(system, createUser(system).apiKey);
    const other = client(system, createUser(system).apiKey);
    const source = (await slow.post('/sources', { component_code: HTTP_SOURCE, name: 'slow-feed' })).body.data;
    const url: string = source.configured_props.http.endpoint_url;
    const otherUrl: string = (await other.post('/sources', { component_code: HTTP_SOURCE, name: 'bystander' })).body.data.configured_props.http.endpoint_url;
    const webhook = (await slow.post('/webhooks', { url: receiver.url })).body.data.id;
    expect((await slow.post('/subscriptions', { emitter_id: source.id, listener_id: webhook })).status).toBe(200);
    await subscriptionsLoaded(system);

    // The receiver fails once (the webhook is no longer sent to directly), then stops answering.
    const held: (() => void)[] = [];
    let open = false;
    receiver.respond = (_r, n) => (n === 1 ? { status: 500 } : open ? { status: 200 } : new Promise((r) => held.push(() => r({ status: 200 }))));
    await eventually(async () => (await post(url, 0)).status === 200, { what: 'the endpoint to accept' });
    await eventually(async () => receiver.received.length >= 1, { what: 'the first (failed) delivery' });

    let accepted = 1;
    const refused = await eventually(
      async () => {
        const res = await post(url, accepted);
        if (res.status === 200) accepted++;
        return res.status === 429 ? res : undefined;
      },
      { what: "the account's delivery backlog to refuse a request", timeoutMs: 60_000, intervalMs: 20 },
    );
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const body = (await refused.json()) as { details: { pending: number } };
    expect(body).toEqual({
      error: expect.stringContaining("this account's webhooks have"),
      code: 'backlog_full',
      details: { scope: 'account', pending: expect.any(Number), limit: 10, retry_after_seconds: Number(refused.headers.get('retry-after')) },
    });
    expect(body.details.pending).toBeGreaterThanOrEqual(10);
    expect(((await (await fetch(`${system.origin}/healthz`)).json()) as { ingest: Record<string, number> }).ingest.deliveries_pending).toBeGreaterThanOrEqual(10);
    const api = await scrapeMetrics(`${system.origin}/metrics`);
    expect(api.api_ingest_deliveries_pending).toBeGreaterThanOrEqual(10);
    expect(api['api_ingest_refused_total{scope="account",waiting="deliveries"}']).toBeGreaterThanOrEqual(1);
    // Delivery shows the requests it holds for the silent receiver (DELIVERIES messages: the webhook failed once).
    const deliveryMetrics = () => scrapeMetrics(`http://127.0.0.1:${system.env.DELIVERY_METRICS_PORT}/metrics`);
    const holding = await deliveryMetrics();
    expect(holding['delivery_webhook_held{path="queue"}']).toBeGreaterThanOrEqual(1);
    expect(holding.delivery_webhook_in_flight).toBeGreaterThanOrEqual(1);
    expect(holding['delivery_webhook_held{path="direct"}']).toBe(0);

    // Another account's endpoint is not held back.
    expect((await post(otherUrl, 1)).status).toBe(200);

    // The receiver answers again: every accepted request arrives, and the endpoint accepts again.
    open = true;
    held.splice(0).forEach((answer) => answer());
    await eventually(async () => receiver.eventIds().size >= accepted, { what: `all ${accepted} accepted events delivered`, timeoutMs: 90_000 });
    await eventually(async () => {
      const m = await deliveryMetrics();
      return m['delivery_webhook_held{path="queue"}'] === 0 && m.delivery_webhook_in_flight === 0 ? m : undefined;
    }, { what: 'delivery to hold nothing once everything arrived' });
    await eventually(async () => (await post(url, 999)).status === 200, { what: 'the endpoint to accept again', timeoutMs: 30_000 });
  });
});
