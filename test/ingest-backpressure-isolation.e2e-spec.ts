import { client, createUser, TestUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { eventually, freePort, startSystem, System } from './support/system';
import { Receiver, subscriptionsLoaded } from './events.helpers';

/**
 * What back-pressure answers and `/healthz` show a hostile tenant (B) about another account (A) whose
 * backlogs are full: B's endpoints are refused only for B's own backlog or the service's total, and no
 * answer B (or anyone, `/healthz` is public) can read names A's sources, keys, webhooks, receivers or
 * account, or gives a figure of A's alone.
 */
const ID = /\b(sc|dc|p|wh|sub|u|o|d|c|key|asub|dlv|inv|rty)_[a-z0-9]{20}\b|\ben[a-z0-9]{22}\b/;
const HEALTH_KEYS = ['component_gc', 'ingest', 'isolation', 'registry', 'status'];
const INGEST_KEYS = ['deliveries_pending', 'events_unrouted', 'invocations_pending', 'max_pending', 'max_pending_deliveries_per_account', 'max_pending_per_account', 'max_pending_per_source', 'max_retries_per_account', 'refused_total', 'retries_pending'];

/** A source whose runs never end (within the test): its later invocations wait in INVOCATIONS. */
const SLEEPER = 'module.exports = { name: "Sleeper", version: "0.0.1", props: { http: "$.interface.http" }, async run() { await new Promise((r) => setTimeout(r, 600000)); } };';
/** An HTTP source that emits 10 events per run. */
const FAN_OUT = 'module.exports = { name: "FanOut", version: "0.0.1", props: { http: "$.interface.http" }, async run() { for (let i = 0; i < 10; i++) this.$emit({ i }); } };';

type Answer = { status: number; text: string; body: { code?: string; details?: Record<string, unknown> }; headers: Headers };

describe('back-pressure answers and /healthz show no other account', () => {
  let system: System;
  let receiver: Receiver;
  let a: TestUser;
  let b: TestUser;
  const secrets: string[] = [];

  const post = async (url: string, n: number): Promise<Answer> => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
    const text = await res.text();
    return { status: res.status, text, body: JSON.parse(text) as Answer['body'], headers: res.headers };
  };
  const health = async (): Promise<{ text: string; body: Record<string, unknown> & { ingest: Record<string, number> } }> => {
    const text = await (await fetch(`${system.origin}/healthz`)).text();
    return { text, body: JSON.parse(text) as Record<string, unknown> & { ingest: Record<string, number> } };
  };
  /** Nothing of A in what B (or a stranger) reads. */
  const showsNothingOfA = (what: string, text: string, headers?: Headers): void => {
    const all = `${text}\n${headers ? [...headers.entries()].map(([k, v]) => `${k}: ${v}`).join('\n') : ''}`;
    expect([what, all.match(ID)?.[0] ?? null]).toEqual([what, null]);
    for (const s of secrets) expect([what, all.includes(s)]).toEqual([what, false]);
  };
  const healthShowsNoAccount = async (): Promise<Record<string, number>> => {
    const h = await health();
    expect(Object.keys(h.body).sort()).toEqual(HEALTH_KEYS);
    expect(Object.keys(h.body.ingest).sort()).toEqual(INGEST_KEYS);
    for (const v of Object.values(h.body.ingest)) expect(typeof v).toBe('number');
    showsNothingOfA('/healthz', h.text);
    return h.body.ingest;
  };
  const deploy = async (u: TestUser, name: string): Promise<{ id: string; url: string }> => {
    const res = await client(system, u.apiKey).post('/sources', { component_code: HTTP_SOURCE, name });
    expect(res.status).toBe(200);
    return { id: res.body.data.id, url: res.body.data.configured_props.http.endpoint_url };
  };

  beforeAll(async () => {
    system = await startSystem(
      {
        HTTP_RATE_PER_SEC: '0',
        INGEST_MAX_PENDING_PER_SOURCE: '3',
        INGEST_MAX_PENDING_PER_ACCOUNT: '4',
        INGEST_MAX_PENDING: '5',
        INGEST_MAX_PENDING_DELIVERIES_PER_ACCOUNT: '5',
        INGEST_BACKLOG_POLL_MS: '50',
        WEBHOOK_TIMEOUT_MS: '60000',
        WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s',
        DELIVERY_METRICS_PORT: String(await freePort()),
      },
      { apps: ['api', 'delivery'] },
    );
    receiver = await new Receiver().start();
    a = createUser(system);
    b = createUser(system);
    secrets.push(a.id, a.apiKey, receiver.url);
  });
  afterAll(async () => {
    await receiver?.stop();
    await system?.stop();
  });

  it("refuses B only for B's own backlog or the service's total, in answers that name nothing of A", async () => {
    const sourceA = await deploy(a, 'a-feed');
    const sourceB = await deploy(b, 'b-feed');
    secrets.push(sourceA.id, sourceA.url.split('/e/')[1]);
    // No runner yet: A's invocations wait, until A's own source is refused.
    for (let n = 0; n < 3; n++) expect((await post(sourceA.url, n)).status).toBe(200);
    await eventually(async () => (await health()).body.ingest.invocations_pending >= 3, { what: "the backlog read to count A's invocations" });
    const fullA = await post(sourceA.url, 3);
    expect([fullA.status, fullA.body.code, fullA.body.details?.scope]).toEqual([429, 'backlog_full', 'source']);
    // A's full source is no reason to refuse B, and B's answer says nothing of it.
    const okB = await post(sourceB.url, 0);
    expect(okB.status).toBe(200);
    showsNothingOfA("B's accepted request", okB.text, okB.headers);
    expect((await post(sourceB.url, 1)).status).toBe(200);
    await eventually(async () => (await health()).body.ingest.invocations_pending >= 5, { what: 'the backlog read to reach the service bound' });
    // The service's total is over its bound: B is refused with the service's figure, never with A's.
    const fullB = await post(sourceB.url, 2);
    expect([fullB.status, fullB.body]).toEqual([429, { error: expect.stringMatching(/^the service has 5 invocations waiting to run \(limit 5\)/), code: 'backlog_full', details: { scope: 'system', pending: 5, limit: 5, retry_after_seconds: expect.any(Number) } }]);
    showsNothingOfA("B's refusal", fullB.text, fullB.headers);
    // /healthz (public: read here with no key) has the service's totals only.
    expect(await healthShowsNoAccount()).toMatchObject({ invocations_pending: 5, max_pending_per_source: 3 });
  });

  it("holds back A's endpoints for A's slow webhook receiver, never B's, and names neither the webhook nor the receiver", async () => {
    await system.startApp('runner', 'runner');
    await eventually(async () => (await health()).body.ingest.invocations_pending === 0, { what: 'the runner to drain the backlog', timeoutMs: 60_000 });
    const api = client(system, a.apiKey);
    const sourceA = await deploy(a, 'a-slow-feed');
    const sourceB = await deploy(b, 'b-bystander');
    const webhook = (await api.post('/webhooks', { url: receiver.url })).body.data.id as string;
    secrets.push(sourceA.id, sourceA.url.split('/e/')[1], webhook);
    expect((await api.post('/subscriptions', { emitter_id: sourceA.id, listener_id: webhook })).status).toBe(200);
    await subscriptionsLoaded(system);
    // The receiver fails once (deliveries then go through DELIVERIES), then stops answering.
    const held: (() => void)[] = [];
    receiver.respond = (_r, n) => (n === 1 ? { status: 500 } : new Promise((r) => held.push(() => r({ status: 200 }))));
    await eventually(async () => (await post(sourceA.url, 0)).status === 200, { what: "A's endpoint to accept", timeoutMs: 30_000 });
    await eventually(async () => receiver.received.length >= 1, { what: 'the first (failed) delivery', timeoutMs: 30_000 });
    let n = 1;
    const refused = await eventually(
      async () => {
        const res = await post(sourceA.url, n++);
        return res.status === 429 && res.body.details?.scope === 'account' ? res : undefined;
      },
      { what: "A's delivery backlog to refuse A's requests", timeoutMs: 60_000, intervalMs: 20 },
    );
    expect([refused.body.code, refused.body.details?.scope, refused.body.details?.limit]).toEqual(['backlog_full', 'account', 5]);
    // Even A's own refusal names no webhook, receiver or account.
    expect(refused.text).not.toContain(webhook);
    expect(refused.text).not.toContain(receiver.url);
    expect(refused.text).not.toContain(a.id);
    // B's endpoint is served, and its answer and /healthz carry nothing of A.
    const okB = await post(sourceB.url, 0);
    expect(okB.status).toBe(200);
    showsNothingOfA("B's accepted request", okB.text, okB.headers);
    expect((await healthShowsNoAccount()).deliveries_pending).toBeGreaterThanOrEqual(5);
    held.splice(0).forEach((answer) => answer());
    receiver.respond = () => ({ status: 200 });
  });
  it("holds an account's stuck invocations at its own bound: runs that never end refuse that account, not B", async () => {
    // A third account (its webhooks hold nothing back): one run of its fan-out source emits 10 events to its sleeper,
    // whose runs never end. Subscriptions start runs of an account's listeners up to its bound (4) only: before, all 10
    // were stored, and such a fan-out could fill a partition past what its consumer may have outstanding.
    const c = createUser(system);
    const api = client(system, c.apiKey);
    const fanOut = (await api.post('/sources', { component_code: FAN_OUT, name: 'fan-out' })).body.data;
    const sleeper = (await api.post('/sources', { component_code: SLEEPER, name: 'sleeper' })).body.data;
    expect((await api.post('/subscriptions', { emitter_id: fanOut.id, listener_id: sleeper.id })).status).toBe(200);
    await subscriptionsLoaded(system);
    const bystander = await deploy(b, 'b-after-sleepers');
    await eventually(async () => (await health()).body.ingest.invocations_pending === 0, { what: 'an empty backlog', timeoutMs: 60_000 });
    expect((await api.post(`/sources/${fanOut.id}/run`, {})).status).toBe(202);
    await eventually(async () => system.logs('delivery').includes("events not given to an account's listeners"), { what: 'the router to stop at the bound', timeoutMs: 30_000 });
    await eventually(async () => (await health()).body.ingest.invocations_pending === 4, { what: "the sleeper's backlog read", timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await health()).body.ingest.invocations_pending).toBe(4);
    const refused = await post(fanOut.configured_props.http.endpoint_url, 0);
    expect([refused.status, refused.body.code, refused.body.details?.scope, refused.body.details?.limit]).toEqual([429, 'backlog_full', 'account', 4]);
    expect(refused.text).toMatch(/this account's sources have \d+ invocations waiting to run \(limit 4\)/);
    // Runs queued by hand are refused by the same bound.
    const manual = await api.post(`/sources/${fanOut.id}/run`, {});
    expect([manual.status, manual.body.code, manual.body.details?.scope, manual.headers.get('retry-after') !== null]).toEqual([429, 'backlog_full', 'account', true]);
    const flow = await api.post('/workflows', { name: 'c-flow', trigger: { manual: {} }, steps: [{ name: 's', code: 'export default defineComponent({ async run() { return 1; } });' }] });
    expect(flow.status).toBe(200);
    const flowRun = await api.post(`/workflows/${flow.body.data.id}/run`, {});
    expect([flowRun.status, flowRun.body.code, flowRun.body.details?.scope]).toEqual([429, 'backlog_full', 'account']);
    // B is served.
    const okB = await post(bystander.url, 0);
    expect(okB.status).toBe(200);
    showsNothingOfA("B's request beside the sleepers", okB.text, okB.headers);
  });
});
