import { client } from './support/accounts';
import { eventually, freePort } from './support/system';
import { scrapeMetrics } from './support/metrics';
import { onePartition, post } from './support/partition-sources';

/**
 * One account's slow sources cannot hold up the other sources of their partition. A runner holds at most
 * RUNNER_MAX_INFLIGHT_PER_PARTITION invocations of a partition (40 here, one partition for everything): A fills
 * that with runs that wait ten minutes, and before, B's next invocation waited behind them for as long.
 */
const SLEEPER = 'module.exports = { name: "Sleeper", version: "0.0.1", props: { http: "$.interface.http" }, async run() { await new Promise((r) => setTimeout(r, 600000)); } };';

describe("fairness between the sources of a partition (an account's slow runs and backlog)", () => {
  const partition = onePartition({
    RUNNER_MAX_INFLIGHT_PER_PARTITION: '40',
    HTTP_RATE_PER_SEC: '0',
    INGEST_MAX_PENDING_PER_SOURCE: '0',
    INGEST_MAX_PENDING_PER_ACCOUNT: '0',
    INGEST_MAX_PENDING: '0',
  });
  const { deploy, counterOfB, runsOfB } = partition;

  it("runs B's invocations, in order, while A's slow runs and their backlog hold the partition", async () => {
    const slowA = await deploy(partition.a, SLEEPER, 'a-sleeper');
    const slowA2 = await deploy(partition.a, SLEEPER, 'a-sleeper-2');
    const countB = await counterOfB();

    // A: two sources whose runs never end (in this test), 150 requests each, far more than the partition holds.
    for (let n = 0; n < 150; n++) {
      expect(await post(slowA.url, { n })).toBe(200);
      expect(await post(slowA2.url, { n })).toBe(200);
    }
    // B: 60 requests, more than the quarter of the room an account keeps once the room is short.
    await runsOfB(countB, 60, "behind A's backlog");
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
  const partition = onePartition(async () => ({
    RUNNER_MAX_INFLIGHT_PER_PARTITION: '40',
    HTTP_RATE_PER_SEC: '0',
    INGEST_MAX_PENDING_PER_ACCOUNT: '100',
    DELIVERY_METRICS_PORT: String(await freePort()),
  }));
  const { deploy, counterOfB, runsOfB } = partition;
  const notStarted = async (): Promise<number> =>
    (await scrapeMetrics(`http://127.0.0.1:${partition.system.env.DELIVERY_METRICS_PORT}/metrics`))['delivery_chain_stopped_total{reason="backlog"}'] ?? 0;

  it("runs B's invocations while A's events fan out to listeners that never finish", async () => {
    const flood = await deploy(partition.a, FLOOD, 'a-flood');
    const listeners = [await deploy(partition.a, SLEEPER, 'a-listener-1'), await deploy(partition.a, SLEEPER, 'a-listener-2')];
    for (const l of listeners) expect((await client(partition.system, partition.a.apiKey).post(`/subscriptions?emitter_id=${flood.id}&listener_id=${l.id}`)).status).toBe(200);
    const countB = await counterOfB();

    expect(await post(flood.url, {})).toBe(200);
    // The flood's events indexed (the last 100 kept), then routed: a moment for the router to fan them out.
    const summaries = async () => (await client(partition.system, partition.a.apiKey).get(`/sources/${flood.id}/event_summaries?limit=100`)).body.data.length;
    await eventually(async () => (await summaries()) === 100, { what: "the flood's events", timeoutMs: 60_000 });
    await new Promise((r) => setTimeout(r, 2_000));
    await runsOfB(countB, 10, "behind A's listeners");
    // Most of A's 1,200 runs were not started; what was counted as waiting stays near the bound.
    expect(await notStarted()).toBeGreaterThan(900);
    expect(partition.system.logs('delivery')).toContain("events not given to an account's listeners");
  });
});
