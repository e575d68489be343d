import { createUser, TestUser } from './support/accounts';
import { COUNTER, post, sourcesOf } from './support/partition-sources';
import { eventually, startSystem, System } from './support/system';

/**
 * Timers whose runs hang cannot fill a partition. A timer fired every slot whether or not the source's previous one
 * had run: six sources of A's whose runs never finish (in this test), at one slot a second, piled up more invocations
 * than the partition's consumer may have outstanding (`max_ack_pending`, 40 here: RUNNER_MAX_INFLIGHT_PER_PARTITION 4,
 * one partition for everything), so JetStream handed out nothing behind them and B's source on the same partition
 * never ran. Now a timer fires no slot while its previous one waits to be processed.
 */
const HUNG_TIMER = 'module.exports = { name: "Hung timer", version: "1", props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 1 } } }, async run() { await new Promise((r) => setTimeout(r, 600000)); } };';

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

  const { deploy, emitted } = sourcesOf(() => system);

  it("runs B's source while A's timers keep firing at sources whose runs never finish", async () => {
    const countB = await deploy(b, COUNTER, 'b-counter');
    expect(await post(countB.url, { n: -1 })).toBe(200);
    await eventually(async () => (await emitted(b, countB.id)).includes(-1), { what: "B's source to run" });

    for (let i = 0; i < 6; i++) await deploy(a, HUNG_TIMER, `a-hung-timer-${i}`);
    // Twenty slots of each: three times what the partition's consumer may have outstanding.
    await new Promise((r) => setTimeout(r, 20_000));

    for (let n = 0; n < 10; n++) expect(await post(countB.url, { n })).toBe(200);
    await eventually(async () => (await emitted(b, countB.id)).length === 11, { what: "B's 10 invocations to run beside A's hung timers", timeoutMs: 60_000 });
    expect(await emitted(b, countB.id)).toEqual([-1, ...Array.from({ length: 10 }, (_, n) => n)]);
  });
});
