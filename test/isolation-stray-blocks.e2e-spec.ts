import { client, createUser } from './support/accounts';
import { deployHttpSource, postUntilOk } from './support/http-sources';
import { eventually, startSystem, System } from './support/system';

/**
 * Code a run leaves behind that blocks its sandbox's thread after the run ended (docs/sandbox.md, "Where runs
 * execute"): it is no run in flight, so the account's next run, of another source, waits behind it until its own
 * deadline and is the one blamed (alone in flight); another account's source answers meanwhile.
 */
const SPINNER = `module.exports = { name: "Spinner", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run() { setTimeout(() => { for (;;) {} }, 200); this.http.respond({ status: 200, body: "left a spinner" }); } };`;
const INNOCENT = `module.exports = { name: "Innocent", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run() { this.$emit({ fine: true }); this.http.respond({ status: 200, body: "innocent ok" }); } };`;

describe("a block left behind by a run that ended", () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({ RUN_TIMEOUT_MS: '2000', HTTP_RATE_PER_SEC: '0', HTTP_RESPONSE_TIMEOUT_MS: '8000' });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("is blamed on the account's next run, alone in flight; another account's source answers", async () => {
    const a = createUser(system);
    const b = createUser(system);
    const spinner = await deployHttpSource(system, a, SPINNER);
    const innocent = await deployHttpSource(system, a, INNOCENT);
    const other = await deployHttpSource(system, b, INNOCENT);
    await postUntilOk(other.url);
    expect(await (await postUntilOk(spinner.url)).text()).toBe('left a spinner');
    await new Promise((r) => setTimeout(r, 500));
    const held = fetch(innocent.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    // Another account goes on while A's sandbox spins.
    const res = await fetch(other.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect([res.status, await res.text()]).toEqual([200, 'innocent ok']);
    const heldRes = await held;
    expect([heldRes.status, await heldRes.text()]).toEqual([502, expect.stringMatching(/timed out/)]);
    const errors = await eventually(async () => {
      const r = await client(system, a.apiKey).get(`/sources/${innocent.id}/event_summaries?event_name=$errors&expand=event&limit=10`);
      const found = (r.body.data as { event: { error?: { message: string } } }[]).map((s) => s.event.error?.message ?? '');
      return found.length ? found : undefined;
    }, { what: "the innocent source's $errors event", timeoutMs: 30_000 });
    expect(errors[0]).toMatch(/run timed out after 2000 ms \(its sandbox process was stopped\)/);
    // The spinner's sandbox is gone with the stop: the innocent source's next run answers.
    expect(await (await postUntilOk(innocent.url)).text()).toBe('innocent ok');
  });
});
