import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * A hostile tenant's lifecycle hooks: `deploy`, `activate` and `deactivate` that block their thread, never end, or
 * throw a value whose getters throw. The runner runs them when a source is created, updated, deactivated and
 * deleted: whatever they do, each of those ends (the source answers, stops answering, is gone), the owner gets a
 * `$errors` event, and another account's source goes on answering and emitting meanwhile.
 */
const hooked = (how: string): string => `module.exports = {
  name: "Hooks", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  hooks: {
    async deploy() { ${how} },
    async activate() { ${how} },
    async deactivate() { ${how} },
  },
  async run(event) { this.http.respond({ status: 200, body: "hooked " + (event.body.n ?? "") }); },
};`;

const HOWS: Record<string, string> = {
  block: 'await null; for (;;) {}',
  hang: 'await new Promise(() => {});',
  'throw-getters': 'throw { get name() { throw 1; }, get message() { throw 2; } };',
};

const VICTIM = `module.exports = {
  name: "Victim", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) { this.$emit({ n: event.body.n }); this.http.respond({ status: 200, body: "victim " + event.body.n }); },
};`;

describe("a hostile tenant's lifecycle hooks", () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;
  let victim: { id: string; url: string };
  let n = 0;

  const send = async (url: string, body: unknown): Promise<{ status: number; text: string }> => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, text: await res.text() };
  };
  const victimGoesOn = async (): Promise<void> => {
    const mine = ++n;
    expect(await send(victim.url, { n: mine })).toEqual({ status: 200, text: `victim ${mine}` });
    await eventually(async () => (await client(system, b.apiKey).get(`/sources/${victim.id}/event_summaries?expand=event`)).body.data.some((e: { event: { n: number } }) => e.event.n === mine), { what: `B's event ${mine}`, timeoutMs: 30_000 });
  };

  beforeAll(async () => {
    system = await startSystem({ RUN_TIMEOUT_MS: '3000', HTTP_RATE_PER_SEC: '0', HTTP_RESPONSE_TIMEOUT_MS: '20000' });
    a = createUser(system);
    b = createUser(system);
    const res = await client(system, b.apiKey).post('/sources', { component_code: VICTIM });
    victim = { id: res.body.data.id, url: res.body.data.configured_props.http.endpoint_url };
    await eventually(async () => (await send(victim.url, { n: 0 })).status === 200, { what: 'the victim', timeoutMs: 30_000 });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it.each(Object.keys(HOWS))('hooks that %s: the source is created, updated, deactivated and deleted all the same', async (how) => {
    const api = client(system, a.apiKey);
    const created = await api.post('/sources', { component_code: hooked(HOWS[how]) });
    expect(created.status).toBe(200);
    const { id } = created.body.data;
    const url = created.body.data.configured_props.http.endpoint_url as string;
    // Its runs are served once deploy and activate have ended (each failed or timed out).
    await eventually(async () => (await send(url, { n: 1 })).status === 200, { what: 'the hooked source to answer', timeoutMs: 60_000 });
    await victimGoesOn();
    const errors = await eventually(async () => {
      const data = (await api.get(`/sources/${id}/event_summaries?event_name=%24errors&expand=event`)).body.data as { event: { error: { name: unknown; message: unknown } } }[];
      return data.length >= 2 ? data : undefined;
    }, { what: 'the hooks\' $errors events', timeoutMs: 30_000 });
    for (const e of errors) expect([typeof e.event.error.name, typeof e.event.error.message]).toEqual(['string', 'string']);

    // An update runs deactivate (old code) and activate (new): the new code answers.
    const updated = await api.put(`/sources/${id}`, { component_code: hooked(HOWS[how]).replace('"hooked "', '"updated "') });
    expect(updated.status).toBe(200);
    await eventually(async () => (await send(url, { n: 2 })).text === 'updated 2', { what: 'the updated code to answer', timeoutMs: 60_000 });
    await victimGoesOn();

    // Deactivated, it stops answering; deleted, it is gone.
    expect((await api.put(`/sources/${id}`, { component_id: updated.body.data.component_id, active: false })).status).toBe(200);
    await eventually(async () => (await send(url, { n: 3 })).status === 404, { what: 'the deactivated source to stop answering', timeoutMs: 60_000 });
    expect((await api.del(`/sources/${id}`)).status).toBeLessThan(300);
    expect((await api.get(`/sources/${id}`)).status).toBe(404);
    await victimGoesOn();
    for (const [name, proc] of system.procs) expect([name, proc.exitCode, proc.signalCode]).toEqual([name, null, null]);
  });
});
