import { client, createUser, TestUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { scrapeMetrics } from './support/metrics';
import { COUNTER, post, sourcesOf } from './support/partition-sources';

/**
 * One account's slow sources cannot hold up the other sources of their partition. A runner holds at most
 * RUNNER_MAX_INFLIGHT_PER_PARTITION invocations of a partition (40 here, one partition for everything): A fills
 * that with runs that wait ten minutes, and before, B's next invocation waited behind them for as long.
 */
const SLEEPER = 'module.exports = { name: "Sleeper", version: "0.0.1", props: { http: "$.interface.http" }, async run() { await new Promise((r) => setTimeout(r, 600000)); } };';

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

  const { deploy, emitted } = sourcesOf(() => system);

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

/**
 * Subscriptions cannot fill a partition either. A's source emits 600 events per request to two listeners whose runs
 * never end: before, one request stored 1,200 invocations in the partition, more than the runner's consumer may
 * have outstanding (`max_ack_pending`, 400 here), so JetStream handed out nothing behind them and B's source on the
 * same partition never ran again. Now the router starts no more runs of an account's listeners once the account
 * has INGEST_MAX_PENDING_PER_ACCOUNT invocations waiting; what it does not start is counted and logged.
 */
const FLOOD = 'module.exports = { name: "Flood", version: "0.0.1", props: { http: "$.interface.http" }, async run() { for (let i = 0; i < 600; i++) this.$emit({ i }, { id: "e" + i + "-" + Date.now() }); } };';

describe('fairness between the sources of a partition (an account fanning its events out to slow listeners)', () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;

  beforeAll(async () => {
    system = await startSystem({
      PARTITIONS: '1',
      RUNNER_MAX_INFLIGHT_PER_PARTITION: '40',
      HTTP_RATE_PER_SEC: '0',
      INGEST_MAX_PENDING_PER_ACCOUNT: '100',
      DELIVERY_METRICS_PORT: String(await freePort()),
    });
    a = createUser(system);
    b = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const { deploy, emitted } = sourcesOf(() => system);
  const notStarted = async (): Promise<number> =>
    (await scrapeMetrics(`http://127.0.0.1:${system.env.DELIVERY_METRICS_PORT}/metrics`))['delivery_chain_stopped_total{reason="backlog"}'] ?? 0;

  it("runs B's invocations while A's events fan out to listeners that never finish", async () => {
    const flood = await deploy(a, FLOOD, 'a-flood');
    const listeners = [await deploy(a, SLEEPER, 'a-listener-1'), await deploy(a, SLEEPER, 'a-listener-2')];
    for (const l of listeners) expect((await client(system, a.apiKey).post(`/subscriptions?emitter_id=${flood.id}&listener_id=${l.id}`)).status).toBe(200);
    const countB = await deploy(b, COUNTER, 'b-counter');
    expect(await post(countB.url, { n: -1 })).toBe(200);
    await eventually(async () => (await emitted(b, countB.id)).includes(-1), { what: "B's source to run" });

    expect(await post(flood.url, {})).toBe(200);
    // The flood's events indexed (the last 100 kept), then routed: a moment for the router to fan them out.
    const summaries = async () => (await client(system, a.apiKey).get(`/sources/${flood.id}/event_summaries?limit=100`)).body.data.length;
    await eventually(async () => (await summaries()) === 100, { what: "the flood's events", timeoutMs: 60_000 });
    await new Promise((r) => setTimeout(r, 2_000));
    for (let n = 0; n < 10; n++) expect(await post(countB.url, { n })).toBe(200);
    await eventually(async () => (await emitted(b, countB.id)).length === 11, { what: "B's 10 invocations to run behind A's listeners", timeoutMs: 60_000 });
    expect(await emitted(b, countB.id)).toEqual([-1, ...Array.from({ length: 10 }, (_, n) => n)]);
    // Most of A's 1,200 runs were not started; what was counted as waiting stays near the bound.
    expect(await notStarted()).toBeGreaterThan(900);
    expect(system.logs('delivery')).toContain("events not given to an account's listeners");
  });
});
