import { admin, client, createUser, TestUser } from './support/accounts';
import { scrapeMetrics } from './support/metrics';
import { eventually, freePort, startSystem, System } from './support/system';

/**
 * Code an org member left running in the org's sandbox process (here a patched `JSON.stringify`, through which
 * every later run's emits pass) would outlive the member's removal for as long as the process lives, and a busy
 * org's process never idles. Removing the member restarts the org's sandbox processes at once: the hook is gone
 * before a later run's data reaches it, and runs in flight at that moment are run again, not lost nor doubled.
 */
const SPY = `module.exports = {
  name: "Spy", version: "0.0.1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run() {
    const g = globalThis;
    if (!g.__seen) {
      g.__seen = [];
      const stringify = JSON.stringify;
      JSON.stringify = function (...args) {
        const out = stringify.apply(this, args);
        if (typeof out === "string" && out.length < 200 && out.includes("secret-")) g.__seen.push(out);
        return out;
      };
    }
    this.http.respond({ status: 200, body: g.__seen.join("\\n") || "nothing" });
  },
};`;

const ECHO = `module.exports = {
  name: "Echo", version: "0.0.1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    if (event.body.waitMs) await new Promise((r) => setTimeout(r, event.body.waitMs));
    this.$emit({ secret: event.body.secret });
    this.http.respond({ status: 200, body: event.body.secret });
  },
};`;

describe("a removed member's code left running in the org's sandbox", () => {
  let system: System;
  let owner: TestUser;
  let member: TestUser;
  let org: Record<string, string>;

  const restarts = async (): Promise<number> => (await scrapeMetrics(`http://127.0.0.1:${system.env.RUNNER_METRICS_PORT}/metrics`)).runner_sandbox_restarts_total ?? 0;
  const sandboxTasks = async (): Promise<number> => (await scrapeMetrics(`http://127.0.0.1:${system.env.RUNNER_METRICS_PORT}/metrics`)).runner_sandbox_tasks ?? 0;
  const orgSource = async (u: TestUser, code: string): Promise<{ id: string; url: string }> => {
    const res = await client(system, u.apiKey).post(`/sources?org_id=${org.id}`, { component_code: code });
    expect(res.status).toBe(200);
    return { id: res.body.data.id, url: res.body.data.configured_props.http.endpoint_url };
  };
  const call = async (url: string, body: Record<string, unknown> = {}): Promise<{ status: number; text: string }> => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, text: await res.text() };
  };

  beforeAll(async () => {
    system = await startSystem({ REGISTRY_DIR: 'off', HTTP_RATE_PER_SEC: '0', HTTP_RESPONSE_TIMEOUT_MS: '60000', RUNNER_METRICS_PORT: String(await freePort()) });
  });
  beforeEach(async () => {
    owner = createUser(system);
    member = createUser(system);
    org = admin(system, ['orgs', 'create', '--name', 'Spied', '--orgname', `spied-${member.id.slice(2, 14).toLowerCase()}`]);
    for (const u of [owner, member]) admin(system, ['orgs', 'add-member', '--org', org.id, '--user', u.id]);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("does not see the org's runs after the member is removed", async () => {
    const spy = await orgSource(member, SPY);
    const echo = await orgSource(owner, ECHO);
    expect((await call(spy.url)).text).toBe('nothing');
    expect(await call(echo.url, { secret: 'secret-before' })).toEqual({ status: 200, text: 'secret-before' });
    // While a member, the hook sees the org's other sources' runs (one sandbox process per account).
    expect((await call(spy.url)).text).toContain('secret-before');

    const before = await restarts();
    admin(system, ['orgs', 'remove-member', '--org', org.id, '--user', member.id]);
    await eventually(async () => (await restarts()) > before, { what: "the runner to restart the org's sandbox process" });
    expect(await call(echo.url, { secret: 'secret-after' })).toEqual({ status: 200, text: 'secret-after' });
    // The spy's endpoint is public: the ex-member can still call it. The process it patched is gone.
    const seen = await call(spy.url);
    expect(seen.status).toBe(200);
    expect(seen.text).not.toContain('secret-after');
    expect(seen.text).not.toContain('secret-before');
  });

  it('runs the invocations in flight at the restart again: each answered and emitted once', async () => {
    const echo = await orgSource(owner, ECHO);
    const secrets = ['secret-a', 'secret-b', 'secret-c'];
    const answers = Promise.all(secrets.map((secret) => call(echo.url, { secret, waitMs: 3000 })));
    await eventually(async () => (await sandboxTasks()) > 0, { what: 'a run in flight in the sandbox' });
    const before = await restarts();
    admin(system, ['orgs', 'remove-member', '--org', org.id, '--user', member.id]);
    await eventually(async () => (await restarts()) > before, { what: "the runner to restart the org's sandbox process" });
    expect((await answers).sort((a, b) => a.text.localeCompare(b.text))).toEqual(secrets.map((text) => ({ status: 200, text })));
    const api = client(system, owner.apiKey);
    const emitted = await eventually(
      async () => {
        const res = await api.get(`/sources/${echo.id}/event_summaries?expand=event`);
        return res.body?.data?.length >= secrets.length ? (res.body.data as { event: { secret: string } }[]) : undefined;
      },
      { what: 'the three events indexed' },
    );
    expect(emitted.map((e) => e.event.secret).sort()).toEqual(secrets);
  });
});
