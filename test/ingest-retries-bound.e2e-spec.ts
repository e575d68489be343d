import { client, createUser, TestUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { eventually, freePort, startSystem, System } from './support/system';
import { Receiver, sql, subscriptionsLoaded } from './events.helpers';

/** An HTTP source that emits 10 events per run. */
const FAN_OUT = 'module.exports = { name: "FanOut", version: "0.0.1", props: { http: "$.interface.http" }, async run() { for (let i = 0; i < 10; i++) this.$emit({ i }); } };';

/** The user's FAN_OUT source, subscribed by three webhooks that POST to the receiver: 30 deliveries per request. */
async function fanOutToThree(system: System, user: TestUser, receiver: Receiver): Promise<{ source: { id: string; configured_props: { http: { endpoint_url: string } } }; webhooks: string[] }> {
  const api = client(system, user.apiKey);
  const source = (await api.post('/sources', { component_code: FAN_OUT, name: 'fan-out' })).body.data;
  const webhooks: string[] = [];
  for (let i = 0; i < 3; i++) {
    const id = (await api.post('/webhooks', { url: receiver.url })).body.data.id as string;
    webhooks.push(id);
    expect((await api.post('/subscriptions', { emitter_id: source.id, listener_id: id })).status).toBe(200);
  }
  return { source, webhooks };
}

type Answer = { status: number; text: string; body: { error?: string; code?: string; details?: Record<string, unknown> }; headers: Headers };

/**
 * An account whose webhooks keep failing fills the retry queue (`webhook_retries`, kept in the shared Postgres for
 * about a day per delivery) at the rate the delivery app fails its deliveries: before, nothing bounded it (one
 * account wrote about 112,000 rows in 90 s). Past INGEST_MAX_RETRIES_PER_ACCOUNT waiting retries its own endpoints
 * answer 429, another account's are served, and disabling the failing webhooks (which drops their retries) lets the
 * account in again.
 */
describe("an account's waiting webhook retries hold back that account's endpoints", () => {
  let system: System;
  let receiver: Receiver;
  let a: TestUser;
  let b: TestUser;

  const post = async (url: string, n: number): Promise<Answer> => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
    const text = await res.text();
    return { status: res.status, text, body: JSON.parse(text) as Answer['body'], headers: res.headers };
  };
  const ingest = async (): Promise<Record<string, number>> => ((await (await fetch(`${system.origin}/healthz`)).json()) as { ingest: Record<string, number> }).ingest;

  beforeAll(async () => {
    system = await startSystem({
      HTTP_RATE_PER_SEC: '0',
      INGEST_MAX_RETRIES_PER_ACCOUNT: '40',
      WEBHOOK_RETRIES_COUNT_MS: '200',
      INGEST_MAX_PENDING_DELIVERIES_PER_ACCOUNT: '100000',
      WEBHOOK_RETRY_SCHEDULE: '1h',
      DELIVERY_METRICS_PORT: String(await freePort()),
    });
    receiver = await new Receiver().start();
    receiver.respond = () => ({ status: 500 });
    a = createUser(system);
    b = createUser(system);
  });
  afterAll(async () => {
    await receiver?.stop();
    await system?.stop();
  });

  it("refuses the account past its bound, serves another account, and lets it in again once its failing webhooks are disabled", async () => {
    const api = client(system, a.apiKey);
    const { source, webhooks } = await fanOutToThree(system, a, receiver);
    const url = source.configured_props.http.endpoint_url as string;
    const bystander = (await client(system, b.apiKey).post('/sources', { component_code: HTTP_SOURCE, name: 'b-feed' })).body.data;
    await subscriptionsLoaded(system);

    // Each accepted request stands for 30 deliveries that fail and wait an hour for their next attempt.
    let n = 0;
    const refused = await eventually(
      async () => {
        const res = await post(url, n++);
        return res.status === 429 ? res : undefined;
      },
      { what: "A's waiting retries to refuse A's requests", timeoutMs: 60_000, intervalMs: 50 },
    );
    expect(refused.body).toEqual({
      error: expect.stringMatching(/^this account's webhooks have \d+ deliveries waiting to be retried \(limit 40\): retry after \d+ s$/),
      code: 'backlog_full',
      details: { scope: 'account', pending: expect.any(Number), limit: 40, retry_after_seconds: expect.any(Number) },
    });
    expect(refused.body.details!.pending).toBeGreaterThanOrEqual(40);
    expect(Number(refused.headers.get('retry-after'))).toBe(refused.body.details!.retry_after_seconds);
    for (const id of webhooks) expect(refused.text).not.toContain(id);
    expect(refused.text).not.toContain(receiver.url);
    expect((await ingest()).retries_pending).toBeGreaterThanOrEqual(40);
    const metrics = await (await fetch(`${system.origin}/metrics`)).text();
    expect(metrics).toMatch(/^api_ingest_retries_pending \d+$/m);
    expect(metrics).toMatch(/^api_ingest_bound\{bound="account_retries"\} 40$/m);
    expect(metrics).toMatch(/^api_ingest_refused_total\{scope="account",waiting="retries"\} [1-9]\d*$/m);

    // Another account is served.
    expect((await post(bystander.configured_props.http.endpoint_url, 0)).status).toBe(200);

    // Disabling the failing webhooks drops their retries: A is served again.
    for (const id of webhooks) expect((await api.put(`/webhooks/${id}`, { url: receiver.url, active: false })).status).toBe(200);
    await eventually(async () => {
      const r = await post(url, n++);
      if (r.status !== 200) throw new Error(r.text);
      return true;
    }, { what: "A's endpoint to accept again", timeoutMs: 30_000 });
  });
});

/**
 * What the api does not refuse (timers, subscriptions, an api with no retry bound) reaches the retry queue too: past
 * WEBHOOK_MAX_RETRIES_PER_ACCOUNT waiting retries, the account's failed attempts are given up and recorded as such,
 * while another account's failed attempts still wait for their retry.
 */
describe("an account's failed webhook attempts past WEBHOOK_MAX_RETRIES_PER_ACCOUNT", () => {
  let system: System;
  let receiver: Receiver;

  beforeAll(async () => {
    system = await startSystem({
      HTTP_RATE_PER_SEC: '0',
      INGEST_MAX_RETRIES_PER_ACCOUNT: '0',
      WEBHOOK_MAX_RETRIES_PER_ACCOUNT: '30',
      WEBHOOK_RETRIES_COUNT_MS: '100',
      INGEST_MAX_PENDING_DELIVERIES_PER_ACCOUNT: '100000',
      WEBHOOK_RETRY_SCHEDULE: '1h',
      DELIVERY_METRICS_PORT: String(await freePort()),
    });
    receiver = await new Receiver().start();
    receiver.respond = () => ({ status: 503 });
  });
  afterAll(async () => {
    await receiver?.stop();
    await system?.stop();
  });

  it('are recorded as not retried, and every one is either waiting or recorded so; another account keeps its retries', async () => {
    const a = createUser(system);
    const b = createUser(system);
    const api = client(system, a.apiKey);
    const { source, webhooks } = await fanOutToThree(system, a, receiver);
    const apiB = client(system, b.apiKey);
    const sourceB = (await apiB.post('/sources', { component_code: HTTP_SOURCE, name: 'b-feed' })).body.data;
    const webhookB = (await apiB.post('/webhooks', { url: receiver.url })).body.data.id as string;
    expect((await apiB.post('/subscriptions', { emitter_id: sourceB.id, listener_id: webhookB })).status).toBe(200);
    await subscriptionsLoaded(system);

    const inA = `(${webhooks.map((id) => `'${id}'`).join(', ')})`;
    const counts = async (): Promise<{ waiting: number; givenUp: number }> => {
      const [{ waiting }] = await sql<{ waiting: number }>(system, `select count(*)::int as waiting from webhook_retries where webhook_id in ${inA}`);
      const [{ given_up: givenUp }] = await sql<{ given_up: number }>(system, `select count(*)::int as given_up from webhook_deliveries where webhook_id in ${inA} and status = 'exhausted'`);
      return { waiting, givenUp };
    };
    // Each request: 10 events, 30 deliveries that fail. Sent until the delivery app has counted the bound passed.
    let requests = 0;
    await eventually(
      async () => {
        expect((await fetch(source.configured_props.http.endpoint_url, { method: 'POST', body: JSON.stringify({ n: requests++ }) })).status).toBe(200);
        return (await counts()).givenUp > 0;
      },
      { what: "A's failed deliveries to be given up", timeoutMs: 60_000, intervalMs: 200 },
    );
    // Every delivery either waits for its retry or is recorded as given up.
    const { waiting, givenUp } = await eventually(
      async () => {
        const c = await counts();
        return c.waiting + c.givenUp === requests * 30 ? c : undefined;
      },
      { what: `every one of A's ${requests * 30} deliveries to wait for a retry or be given up`, timeoutMs: 60_000 },
    );
    expect(waiting).toBeGreaterThanOrEqual(30);
    expect(givenUp).toBeGreaterThan(0);

    // A's webhook deliveries say why.
    const listed = (await api.get(`/webhooks/${webhooks[0]}/deliveries?limit=100`)).body.data as { status: string; error: string | null; response_code: number | null }[];
    const notRetried = listed.find((d) => d.status === 'exhausted');
    expect(notRetried).toMatchObject({ response_code: 503, error: expect.stringMatching(/^not retried: this account's webhooks have \d+ deliveries waiting to be retried \(limit 30\)$/) });

    // B's failed delivery waits for its retry.
    expect((await fetch(sourceB.configured_props.http.endpoint_url, { method: 'POST', body: '{"b":1}' })).status).toBe(200);
    const attemptsB = await eventually(
      async () => {
        const rows = (await apiB.get(`/webhooks/${webhookB}/deliveries`)).body.data as { status: string; next_attempt_at_ms: number | null }[];
        return rows.length ? rows : undefined;
      },
      { what: "B's first attempt", timeoutMs: 30_000 },
    );
    expect(attemptsB.map((d) => d.status)).toEqual(['failed']);
    expect(attemptsB[0].next_attempt_at_ms).toEqual(expect.any(Number));
    expect(await sql(system, `select attempt from webhook_retries where webhook_id = $1`, [webhookB])).toEqual([{ attempt: 2 }]);
  });
});
