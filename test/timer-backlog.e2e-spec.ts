import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * Timers whose runs hang cannot fill a partition. A timer fired every slot whether or not the source's previous one
 * had run: six sources of A's whose runs never finish (in this test), at one slot a second, piled up more invocations
 * than the partition's consumer may have outstanding (`max_ack_pending`, 40 here: RUNNER_MAX_INFLIGHT_PER_PARTITION 4,
 * one partition for everything), so JetStream handed out nothing behind them and B's source on the same partition
 * never ran. Now a timer fires no slot while its previous one waits to be processed.
 */
const HUNG_TIMER = 'module.exports = { name: "Hung timer", version: "1", props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 1 } } }, async run() { await new Promise((r) => setTimeout(r, 600000)); } };';
const COUNTER = 'module.exports = { name: "Counter", version: "0.0.1", props: { http: "$.interface.http" }, async run(event) { this.$emit({ n: event.body.n }); } };';

describe('timers against the partition (an account whose timer runs hang)', () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;

  beforeAll(async () => {
    system = await startSystem({
      PARTITIONS: '1',
      RUNNER_MAX_INFLIGHT_PER_PARTITION: '4',
      HTTP_RATE_PER_SEC: '0',
      TIMER_MIN_INTERVAL_SECONDS: '1',
      RUN_TIMEOUT_MS: '600000',
      MAX_RUN_TIMEOUT_MS: '600000',
    });
    a = createUser(system);
    b = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const deploy = async (u: TestUser, code: string, name: string): Promise<{ id: string; url?: string }> => {
    const res = await client(system, u.apiKey).post('/sources', { component_code: code, name });
    expect([name, res.status]).toEqual([name, 200]);
    return { id: res.body.data.id, url: res.body.data.configured_props.http?.endpoint_url };
  };
  const emitted = async (u: TestUser, id: string): Promise<number[]> =>
    ((await client(system, u.apiKey).get(`/sources/${id}/event_summaries?limit=100&expand=event`)).body?.data ?? []).map((e: { event: { n: number } }) => e.event.n).reverse();
  const post = async (url: string, body: unknown): Promise<number> => (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).status;

  it("runs B's source while A's timers keep firing at sources whose runs never finish", async () => {
    const countB = await deploy(b, COUNTER, 'b-counter');
    expect(await post(countB.url as string, { n: -1 })).toBe(200);
    await eventually(async () => (await emitted(b, countB.id)).includes(-1), { what: "B's source to run" });

    for (let i = 0; i < 6; i++) await deploy(a, HUNG_TIMER, `a-hung-timer-${i}`);
    // Twenty slots of each: three times what the partition's consumer may have outstanding.
    await new Promise((r) => setTimeout(r, 20_000));

    for (let n = 0; n < 10; n++) expect(await post(countB.url as string, { n })).toBe(200);
    await eventually(async () => (await emitted(b, countB.id)).length === 11, { what: "B's 10 invocations to run beside A's hung timers", timeoutMs: 60_000 });
    expect(await emitted(b, countB.id)).toEqual([-1, ...Array.from({ length: 10 }, (_, n) => n)]);
  });
});
