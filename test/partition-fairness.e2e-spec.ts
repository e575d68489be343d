import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * One account's slow sources cannot hold up the other sources of their partition. A runner holds at most
 * RUNNER_MAX_INFLIGHT_PER_PARTITION invocations of a partition (40 here, one partition for everything): A fills
 * that with runs that wait ten minutes, and before, B's next invocation waited behind them for as long.
 */
const SLEEPER = 'module.exports = { name: "Sleeper", version: "0.0.1", props: { http: "$.interface.http" }, async run() { await new Promise((r) => setTimeout(r, 600000)); } };';
const COUNTER = 'module.exports = { name: "Counter", version: "0.0.1", props: { http: "$.interface.http" }, async run(event) { this.$emit({ n: event.body.n }); } };';

describe("fairness between the sources of a partition (an account's slow runs and backlog)", () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;

  beforeAll(async () => {
    system = await startSystem({
      PARTITIONS: '1',
      RUNNER_MAX_INFLIGHT_PER_PARTITION: '40',
      HTTP_RATE_PER_SEC: '0',
      INGEST_MAX_PENDING_PER_SOURCE: '0',
      INGEST_MAX_PENDING_PER_ACCOUNT: '0',
      INGEST_MAX_PENDING: '0',
    });
    a = createUser(system);
    b = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const deploy = async (u: TestUser, code: string, name: string): Promise<{ id: string; url: string }> => {
    const res = await client(system, u.apiKey).post('/sources', { component_code: code, name });
    expect(res.status).toBe(200);
    return { id: res.body.data.id, url: res.body.data.configured_props.http.endpoint_url };
  };
  const post = async (url: string, body: unknown): Promise<number> => (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).status;
  const emitted = async (u: TestUser, id: string): Promise<number[]> => {
    const res = await client(system, u.apiKey).get(`/sources/${id}/event_summaries?limit=100&expand=event`);
    // Newest first.
    return ((res.body?.data ?? []) as { event: { n: number } }[]).map((e) => e.event.n).reverse();
  };

  it("runs B's invocations, in order, while A's slow runs and their backlog hold the partition", async () => {
    const slowA = await deploy(a, SLEEPER, 'a-sleeper');
    const slowA2 = await deploy(a, SLEEPER, 'a-sleeper-2');
    const countB = await deploy(b, COUNTER, 'b-counter');
    // B's source runs before A starts.
    expect(await post(countB.url, { n: -1 })).toBe(200);
    await eventually(async () => (await emitted(b, countB.id)).includes(-1), { what: "B's source to run" });

    // A: two sources whose runs never end (in this test), 150 requests each, far more than the partition holds.
    for (let n = 0; n < 150; n++) {
      expect(await post(slowA.url, { n })).toBe(200);
      expect(await post(slowA2.url, { n })).toBe(200);
    }
    // B: 60 requests, more than the quarter of the room an account keeps once the room is short.
    for (let n = 0; n < 60; n++) expect(await post(countB.url, { n })).toBe(200);
    const expected = [-1, ...Array.from({ length: 60 }, (_, n) => n)];
    await eventually(async () => (await emitted(b, countB.id)).length === expected.length, { what: "B's 60 invocations to run behind A's backlog", timeoutMs: 60_000 });
    expect(await emitted(b, countB.id)).toEqual(expected);
  });
});
