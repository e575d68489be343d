import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';
import { deployHttpSource } from './support/http-sources';

/**
 * One account's large emits against the runner's memory. A run's result may be 64 MiB of events, and the runner
 * publishes an account's events within EMITS_BYTES_PER_SECOND_PER_ACCOUNT: past it they wait, in the runner. A source
 * runs one invocation at a time, but each of an account's sources held one such result: an account with enough sources
 * of large emits (it may have SOURCES_MAX_PER_ACCOUNT, 1,000) held gigabytes in the runner every account shares, until
 * it died — and again after each restart, as the invocations came back. Here the runner has a heap of 160 MB, the
 * account a budget of 2 MiB a second and six sources whose runs emit 40 MB each, one every 8 s (slower than the runner
 * reads them): the runner took them all in and died of it ("JavaScript heap out of memory"). Now it reads no more of an
 * account's answers while that account's events wait for its budget: they wait in the account's own sandbox, within
 * its SANDBOX_MEMORY_MB (over it, that sandbox is stopped and its runs fail with MemoryLimitError).
 */
const HOARD = `module.exports = {
  name: "Hoard", version: "1", props: { http: "$.interface.http" },
  async run(event) {
    await new Promise((r) => setTimeout(r, event.body.wait));
    const pad = "h".repeat(500000);
    for (let i = 0; i < event.body.n; i++) this.$emit({ i, pad });
  },
};`;
const RESPONDER = 'module.exports = { name: "R", version: "1", props: { http: { type: "$.interface.http", customResponse: true } }, async run() { this.http.respond({ status: 200, body: "pong" }); } };';

const SOURCES = 6;
const PACE_MS = 8_000;

describe("the runner against one account's large results (EMITS_BYTES_PER_SECOND_PER_ACCOUNT)", () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;

  const deploy = (user: TestUser, code: string): Promise<{ id: string; url: string }> => deployHttpSource(system, user, code);
  const send = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const count = async (id: string, name: string): Promise<number> =>
    (await client(system, a.apiKey).get(`/sources/${id}/event_summaries?limit=1${name ? `&event_name=${encodeURIComponent(name)}` : ''}`)).body.page_info.total_count;
  const runnerGone = (): boolean => {
    const runner = system.procs.get('runner');
    return runner?.exitCode !== null || runner?.signalCode !== null;
  };

  beforeAll(async () => {
    system = await startSystem(
      { HTTP_RATE_PER_SEC: '0', EMITS_BYTES_PER_SECOND_PER_ACCOUNT: String(2 * 1024 * 1024), SANDBOX_MEMORY_MB: '320', LEASE_TTL_MS: '30000', EMITS_MAX_BYTES: String(256 * 1024 * 1024) },
      { apps: ['api', 'delivery'] },
    );
    // The runner's memory, scaled down: what six sources hold here, a few hundred hold in a runner of gigabytes.
    await system.startApp('runner', 'runner', { NODE_OPTIONS: '--max-old-space-size=160' });
    a = createUser(system);
    b = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("keeps an account's results past its budget in its own sandbox, not in the runner", async () => {
    const responder = await deploy(b, RESPONDER);
    await eventually(async () => (await send(responder.url, {})).status === 200, { what: 'the responder', timeoutMs: 30_000 });
    const hoards: { id: string; url: string }[] = [];
    for (let i = 0; i < SOURCES; i++) hoards.push(await deploy(a, HOARD));
    await eventually(async () => (await Promise.all(hoards.map((h) => send(h.url, { wait: 0, n: 0 })))).every((r) => r.status === 200), { what: 'the hoards', timeoutMs: 30_000 });
    hoards.forEach((h, i) => void send(h.url, { wait: (i + 1) * PACE_MS, n: 80 }));

    // Each hoard's run ends in its 80 events or in a $errors event (its sandbox stopped over SANDBOX_MEMORY_MB, where
    // its answers waited) — or the runner died first.
    const settled = async (id: string): Promise<boolean> => (await count(id, '')) >= 80 || (await count(id, '$errors')) > 0;
    const outcome = await eventually(async () => (runnerGone() ? `the runner died:\n${system.logs('runner').slice(-3000)}` : (await Promise.all(hoards.map((h) => settled(h.id)))).every(Boolean) && 'settled'), {
      what: "the hoards' runs to end",
      timeoutMs: 400_000,
      intervalMs: 2000,
    });
    expect(outcome).toBe('settled');
    const res = await send(responder.url, {});
    expect([res.status, await res.text()]).toEqual([200, 'pong']);
  }, 500_000);
});
