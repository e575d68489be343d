import { onePartition } from './support/partition-sources';

/**
 * Timers whose runs hang cannot fill a partition. A timer fired every slot whether or not the source's previous one
 * had run: six sources of A's whose runs never finish (in this test), at one slot a second, piled up more invocations
 * than the partition's consumer may have outstanding (`max_ack_pending`, 40 here: RUNNER_MAX_INFLIGHT_PER_PARTITION 4,
 * one partition for everything), so JetStream handed out nothing behind them and B's source on the same partition
 * never ran. Now a timer fires no slot while its previous one waits to be processed.
 */
const HUNG_TIMER = 'module.exports = { name: "Hung timer", version: "1", props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 1 } } }, async run() { await new Promise((r) => setTimeout(r, 600000)); } };';

describe('timers against the partition (an account whose timer runs hang)', () => {
  const partition = onePartition({
    RUNNER_MAX_INFLIGHT_PER_PARTITION: '4',
    HTTP_RATE_PER_SEC: '0',
    TIMER_MIN_INTERVAL_SECONDS: '1',
    RUN_TIMEOUT_MS: '600000',
    MAX_RUN_TIMEOUT_MS: '600000',
  });
  const { deploy, counterOfB, runsOfB } = partition;

  it("runs B's source while A's timers keep firing at sources whose runs never finish", async () => {
    const countB = await counterOfB();

    for (let i = 0; i < 6; i++) await deploy(partition.a, HUNG_TIMER, `a-hung-timer-${i}`);
    // Twenty slots of each: three times what the partition's consumer may have outstanding.
    await new Promise((r) => setTimeout(r, 20_000));

    await runsOfB(countB, 10, "beside A's hung timers");
  });
});
