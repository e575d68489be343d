import { client, createUser, TestUser } from './support/accounts';
import { COUNTER, post, sourcesOf } from './support/partition-sources';
import { eventually, startSystem, System } from './support/system';

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
  let system: System;
  let a: TestUser;
  let b: TestUser;

  beforeAll(async () => {
    system = await startSystem({ PARTITIONS: '1', RUNNER_MAX_INFLIGHT_PER_PARTITION: '40', HTTP_RATE_PER_SEC: '0', INGEST_MAX_PENDING_PER_ACCOUNT: '100' });
    a = createUser(system);
    b = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const { deploy, emitted } = sourcesOf(() => system);

  it("runs B's source while A's app hook events wait for a source that never finishes", async () => {
    const sleeper = await deploy(a, SLEEPER, 'a-hook-sleeper');
    const countB = await deploy(b, COUNTER, 'b-counter');
    expect(await post(countB.url, { n: -1 })).toBe(200);
    await eventually(async () => (await emitted(b, countB.id)).includes(-1), { what: "B's source to run" });

    const statuses = new Map<number, number>();
    const as = client(system, a.apiKey);
    for (let n = 0; n < 600; n++) {
      const res = n % 2 ? await as.post(`/sources/${sleeper.id}/app_hook`, { event: { n } }) : await as.post('/apps/github/hook_events', { event_name: 'push', event: { n } });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status === 429) expect(res.body).toEqual(expect.objectContaining({ code: 'backlog_full', details: expect.objectContaining({ scope: 'account' }) }));
      else expect(res.status).toBe(202);
    }

    for (let n = 0; n < 10; n++) expect(await post(countB.url, { n })).toBe(200);
    await eventually(async () => (await emitted(b, countB.id)).length === 11, { what: "B's 10 invocations to run behind A's app hook events", timeoutMs: 60_000 });
    expect(await emitted(b, countB.id)).toEqual([-1, ...Array.from({ length: 10 }, (_, n) => n)]);
    expect(statuses.get(429) ?? 0).toBeGreaterThan(0);
  });
});
