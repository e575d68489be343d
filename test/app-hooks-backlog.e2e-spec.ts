import { client } from './support/accounts';
import { onePartition } from './support/partition-sources';

/**
 * App hook events cannot fill a partition. `POST /v1/sources/{id}/app_hook` and `POST /v1/apps/{app}/hook_events`
 * stored an invocation per call without asking the invocation backlog, as HTTP requests and manual runs do: A's 600
 * events to a source whose runs never finish filled the partition's consumer past its `max_ack_pending` (400 here:
 * RUNNER_MAX_INFLIGHT_PER_PARTITION 40, one partition for everything), so JetStream handed out nothing behind them
 * and B's source on the same partition never ran. Now they answer 429 `backlog_full` once the account has
 * INGEST_MAX_PENDING_PER_ACCOUNT invocations waiting.
 */
const SLEEPER = `module.exports = { name: "Hook sleeper", version: "1", props: { github: { type: "app", app: "github" }, hook: { type: "$.interface.apphook", appProp: "github", eventNames: ["push"] } }, async run() { await new Promise((r) => setTimeout(r, 600000)); } };`;

describe('app hook events against the invocation backlog (an account flooding a slow app hook source)', () => {
  const partition = onePartition({ RUNNER_MAX_INFLIGHT_PER_PARTITION: '40', HTTP_RATE_PER_SEC: '0', INGEST_MAX_PENDING_PER_ACCOUNT: '100' });
  const { deploy, counterOfB, runsOfB } = partition;

  it("runs B's source while A's app hook events wait for a source that never finishes", async () => {
    const sleeper = await deploy(partition.a, SLEEPER, 'a-hook-sleeper');
    const countB = await counterOfB();

    const statuses = new Map<number, number>();
    const as = client(partition.system, partition.a.apiKey);
    for (let n = 0; n < 600; n++) {
      const res = n % 2 ? await as.post(`/sources/${sleeper.id}/app_hook`, { event: { n } }) : await as.post('/apps/github/hook_events', { event_name: 'push', event: { n } });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status === 429) expect(res.body).toEqual(expect.objectContaining({ code: 'backlog_full', details: expect.objectContaining({ scope: 'account' }) }));
      else expect(res.status).toBe(202);
    }

    await runsOfB(countB, 10, "behind A's app hook events");
    expect(statuses.get(429) ?? 0).toBeGreaterThan(0);
  });
});
