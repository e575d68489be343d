import { client, createUser, TestUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { eventually, startSystem, System } from './support/system';

/** An HTTP source whose every run emits 100 events. */
const FLOOD = 'module.exports = { name: "Flood", version: "0.0.1", props: { http: "$.interface.http" }, async run() { for (let i = 0; i < 100; i++) this.$emit({ i }); } };';

type Answer = { status: number; text: string; body: { code?: string; details?: Record<string, unknown> }; headers: Headers };

/**
 * Emitted events the delivery app has not routed count in the service's bound (INGEST_MAX_PENDING) as invocations
 * do: each account's up to INGEST_MAX_PENDING_PER_ACCOUNT. One account's flood of emits refuses that account's
 * requests, never another's.
 */
describe("one account's flood of emitted events holds back that account, not the service", () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;

  const post = async (url: string): Promise<Answer> => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    const text = await res.text();
    return { status: res.status, text, body: JSON.parse(text) as Answer['body'], headers: res.headers };
  };
  const ingest = async (): Promise<Record<string, number>> => ((await (await fetch(`${system.origin}/healthz`)).json()) as { ingest: Record<string, number> }).ingest;
  const deploy = async (u: TestUser, code: string, name: string): Promise<{ id: string; url: string }> => {
    const res = await client(system, u.apiKey).post('/sources', { component_code: code, name });
    expect(res.status).toBe(200);
    return { id: res.body.data.id, url: res.body.data.configured_props.http.endpoint_url };
  };

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', INGEST_MAX_PENDING_PER_ACCOUNT: '10', INGEST_MAX_PENDING: '40', INGEST_BACKLOG_POLL_MS: '50' });
    a = createUser(system);
    b = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("refuses the flooding account (scope account) while B is served, and accepts it again once its events are routed", async () => {
    const flood = await deploy(a, FLOOD, 'a-flood');
    const bystander = await deploy(b, HTTP_SOURCE, 'b-bystander');
    // The delivery app routes B's event (its router consumer exists), then stops: what is emitted now waits for it.
    expect((await post(bystander.url)).status).toBe(200);
    await eventually(async () => ((await client(system, b.apiKey).get(`/sources/${bystander.id}/event_summaries`)).body.data?.length ?? 0) >= 1, { what: "B's first event indexed" });
    await system.stopApp('delivery');

    expect((await post(flood.url)).status).toBe(200);
    await eventually(async () => (await ingest()).events_unrouted >= 100, { what: "A's 100 events counted as unrouted", timeoutMs: 30_000 });
    // 100 unrouted events are over the service's bound (40); they are A's, and count there as A's bound (10).
    const refused = await eventually(
      async () => {
        const res = await post(flood.url);
        return res.status === 429 ? res : undefined;
      },
      { what: "A's endpoint refused" },
    );
    expect([refused.body.code, refused.body.details?.scope, refused.body.details?.limit, refused.headers.get('retry-after') !== null]).toEqual(['backlog_full', 'account', 40, true]);
    expect(refused.text).toMatch(/this account's sources have \d+ emitted events waiting to be routed \(limit 40\)/);
    const manual = await client(system, a.apiKey).post(`/sources/${flood.id}/run`, {});
    expect([manual.status, manual.body.code, manual.body.details?.scope]).toEqual([429, 'backlog_full', 'account']);
    for (let i = 0; i < 3; i++) expect((await post(bystander.url)).status).toBe(200);

    // Routed again: A is accepted.
    await system.startApp('delivery', 'delivery');
    await eventually(async () => (await ingest()).events_unrouted === 0, { what: 'the router to catch up', timeoutMs: 60_000 });
    await eventually(async () => (await post(flood.url)).status === 200, { what: "A's endpoint to accept again" });
  });
});
