import { client, createUser, TestUser } from './support/accounts';
import { rawRequest } from './support/raw-http';
import { eventually, startSystem, System } from './support/system';

/**
 * A hostile tenant against the app hook routes (`POST /v1/apps/{app}/hook_events`,
 * `POST /v1/sources/{id}/app_hook`): another account's sources answer exactly as unknown ones and never
 * receive the caller's events, even when they listen to the same app and event; hostile `event_name`
 * values and bodies are 4xx in the error shape, never a 5xx; an `eventNames()` method that answers
 * too much, throws or hangs costs its own account only.
 */
const MAX_BODY = 4096;
const READ_TIMEOUT_MS = 3000;

const hook = (name: string, eventNames: string) =>
  `module.exports = { name: ${JSON.stringify(name)}, version: "1", props: { github: { type: "app", app: "github" }, hook: { type: "$.interface.apphook", appProp: "github", eventNames: ${eventNames} } }, async run(e) { this.$emit({ got: e }) } };`;
const STATIC = hook('Static hook', '["push", "issues"]');
const METHOD = hook('Method hook', 'async function () { return ["push"]; }');

type Res = { status: number; body: any; text: string }; // eslint-disable-line @typescript-eslint/no-explicit-any

function expectRefused(res: Res, status: number, code?: string): void {
  expect([res.status, res.body]).toEqual([status, expect.objectContaining({ error: expect.any(String), code: code ?? expect.any(String) })]);
  expect(res.text).not.toMatch(/\n\s+at .+:\d+:\d+/);
}

describe('app hooks attacked by a hostile tenant', () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;
  const mine: Record<string, string> = {};
  const theirs: Record<string, string> = {};
  const as = (u: TestUser) => client(system, u.apiKey);
  const deploy = async (u: TestUser, code: string, name: string): Promise<string> => {
    const res = await as(u).post('/sources', { component_code: code, name });
    expect([name, res.status]).toEqual([name, 200]);
    return res.body.data.id as string;
  };
  const events = async (u: TestUser, id: string) => (await as(u).get(`/sources/${id}/event_summaries?limit=100&expand=event`)).body.data as { event: { got: unknown } }[];

  beforeAll(async () => {
    system = await startSystem({ HTTP_MAX_BODY_BYTES: String(MAX_BODY), COMPONENT_READ_TIMEOUT_MS: String(READ_TIMEOUT_MS) });
    a = createUser(system);
    b = createUser(system);
    mine.static = await deploy(a, STATIC, 'a-static');
    mine.method = await deploy(a, METHOD, 'a-method');
    theirs.static = await deploy(b, STATIC, 'b-static');
    theirs.method = await deploy(b, METHOD, 'b-method');
    theirs.inactive = await deploy(b, STATIC, 'b-inactive');
    const inactive = (await as(b).get(`/sources/${theirs.inactive}`)).body.data;
    expect((await as(b).put(`/sources/${theirs.inactive}`, { component_id: inactive.component_id, active: false })).status).toBe(200);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("delivers the caller's hook events to the caller's sources only, though another account listens to the same app and event", async () => {
    const posted = await as(a).post('/apps/github/hook_events', { event_name: 'push', event: { from: 'a' } });
    expect(posted.status).toBe(202);
    expect(posted.body.data.delivered.map((d: { source_id: string }) => d.source_id).sort()).toEqual([mine.static, mine.method].sort());
    // B's name for the same app in the body or the query does not route to B.
    expectRefused(await as(a).post(`/apps/github/hook_events?org_id=${b.id}`, { event_name: 'push', event: { from: 'a' } }), 404, 'not_found');
    expectRefused(await as(a).post('/apps/github/hook_events', { event_name: 'push', event: { from: 'a' }, org_id: b.id }), 404, 'not_found');
    for (const id of [mine.static, mine.method]) await eventually(async () => (await events(a, id)).length === 1, { what: `A's source ${id} to run`, timeoutMs: 30_000 });
    // B's sources ran nothing: A's events reached the runner and would have been emitted by now.
    await new Promise((r) => setTimeout(r, 1000));
    for (const id of Object.values(theirs)) expect([id, await events(b, id)]).toEqual([id, []]);
  });

  it("answers for another account's source exactly as for one that does not exist", async () => {
    const unknown = 'dc_doesnotexist000000';
    const bodies: [string, unknown][] = [
      ['no name', { event: { x: 1 } }],
      ['a name it listens to', { event_name: 'push', event: { x: 1 } }],
      ['a name it does not listen to', { event_name: 'deployment', event: {} }],
      ['an event over HTTP_MAX_BODY_BYTES', { event: { big: 'x'.repeat(MAX_BODY) } }],
    ];
    for (const id of [theirs.static, theirs.method, theirs.inactive]) {
      for (const [what, body] of bodies) {
        const res = await as(a).post(`/sources/${id}/app_hook`, body);
        const none = await as(a).post(`/sources/${unknown}/app_hook`, body);
        expectRefused(res, 404, 'not_found');
        expect([what, res.status, res.text.replaceAll(id, 'ID')]).toEqual([what, none.status, none.text.replaceAll(unknown, 'ID')]);
      }
    }
    // The owner sees what A could not: its inactive source is a 409.
    expectRefused(await as(b).post(`/sources/${theirs.inactive}/app_hook`, { event: {} }), 409);
    for (const id of Object.values(theirs)) expect(await events(b, id)).toEqual([]);
  });

  it('answers hostile event names with 202 and no delivery, or a 4xx, never a 5xx', async () => {
    const listened = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'push ', 'PUSH', ' push', 'push.*', '*', '>', '$errors', '../push', 'пуш', '😀', 'x'.repeat(200), 'push\n', 'push\\u0000'];
    for (const name of listened) {
      const channel = await as(a).post('/apps/github/hook_events', { event_name: name, event: {} });
      expect([name, channel.status, channel.body]).toEqual([name, 202, { data: { delivered: [] } }]);
      for (const id of [mine.static, mine.method]) {
        const one = await as(a).post(`/sources/${id}/app_hook`, { event_name: name, event: {} });
        expect([name, one.status, one.body?.code]).toEqual([name, 400, 'unknown_event_name']);
        expectRefused(one, 400, 'unknown_event_name');
      }
    }
    const malformed: unknown[] = [
      { event_name: 'x'.repeat(201), event: {} },
      { event_name: 'push\u0000', event: {} },
      { event_name: '', event: {} },
      { event_name: ['push'], event: {} },
      { event_name: { toString: 'push' }, event: {} },
      { event_name: 'push', event: 'x' },
      { event_name: 'push', event: null },
      { event_name: 'push', event: [] },
      { event_name: 'push' },
      [],
      'push',
    ];
    for (const body of malformed) {
      for (const path of ['/apps/github/hook_events', `/sources/${mine.static}/app_hook`]) {
        const res = await as(a).post(path, body);
        expect([JSON.stringify(body), path, res.status]).toEqual([JSON.stringify(body), path, 400]);
        expectRefused(res, 400);
      }
    }
    for (const app of ['__proto__', 'constructor', 'GitHub', 'git.hub', '*', '>', 'a'.repeat(101)]) {
      const res = await as(a).post(`/apps/${encodeURIComponent(app)}/hook_events`, { event_name: 'push', event: {} });
      expect([app, res.status]).toEqual([app, app === '__proto__' || app === 'constructor' ? 202 : 400]);
      if (res.status === 202) expect(res.body).toEqual({ data: { delivered: [] } });
      else expectRefused(res, 400);
    }
  });

  it('refuses huge and deeply nested bodies with a 4xx', async () => {
    for (const path of ['/apps/github/hook_events', `/sources/${mine.static}/app_hook`]) {
      expectRefused(await as(a).post(path, { event_name: 'push', event: { big: 'x'.repeat(MAX_BODY) } }), 413, 'payload_too_large');
      expectRefused(await as(a).post(path, { event_name: 'push'.repeat(100_000), event: {} }), 400);
      let deep: unknown = {};
      for (let i = 0; i < 99; i++) deep = { a: deep };
      expectRefused(await as(a).post(path, { event_name: 'push', event: deep }), 400);
      const huge = await rawRequest(system.origin, `POST /v1${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.apiKey}\r\nContent-Type: application/json\r\nContent-Length: 500000000\r\n\r\n{"event":`);
      expectRefused({ status: huge.status, body: JSON.parse(huge.body), text: huge.body }, 413);
    }
  });

  it("bounds what an eventNames() method answers, and a failing one costs its own account only", async () => {
    // Thousands of names: all count, ten are listed when a name is not among them.
    const many = await deploy(a, hook('Many names', 'async function () { return Array.from({ length: 8000 }, (_, i) => "event-" + i + "-" + "n".repeat(80)); }'), 'a-many');
    const wrong = await as(a).post(`/sources/${many}/app_hook`, { event_name: 'nope', event: {} });
    expectRefused(wrong, 400, 'unknown_event_name');
    expect(wrong.body.error).toMatch(/^source dc_\w+ does not listen to "nope"; its event names are "event-0-n+", .* and 7990 more$/);
    expect(wrong.text.length).toBeLessThan(4096);
    expect((await as(a).post(`/sources/${many}/app_hook`, { event_name: `event-7999-${'n'.repeat(80)}`, event: {} })).status).toBe(202);
    // More than OPTIONS_MAX_BYTES of names: the method fails in its sandbox, so the source listens to none.
    const tooMany = await deploy(a, hook('Too many names', 'async function () { return Array.from({ length: 200000 }, (_, i) => "event-" + i + "-" + "n".repeat(80)); }'), 'a-too-many');
    const none = await as(a).post(`/sources/${tooMany}/app_hook`, { event_name: `event-7-${'n'.repeat(80)}`, event: {} });
    expectRefused(none, 400, 'unknown_event_name');
    expect(none.body.error).toMatch(/its event names are \(none\)$/);

    const throws = await deploy(a, hook('Throwing names', 'async function () { throw new Error("e".repeat(5 * 1024 * 1024)); }'), 'a-throws');
    const hangs = await deploy(a, hook('Hanging names', 'async function () { for (;;) {} }'), 'a-hangs');
    for (const id of [throws, hangs]) {
      const res = await as(a).post(`/sources/${id}/app_hook`, { event_name: 'push', event: {} });
      expectRefused(res, 400, 'unknown_event_name');
      expect(res.text.length).toBeLessThan(4096);
    }
    // While A's channel waits on its hanging method, B's channel and hooks are served.
    let settled = false;
    const stuck = as(a).post('/apps/github/hook_events', { event_name: 'push', event: { n: 2 } }).finally(() => {
      settled = true;
    });
    await new Promise((r) => setTimeout(r, 200));
    const other = await as(b).post('/apps/github/hook_events', { event_name: 'issues', event: { from: 'b' } });
    expect([other.status, other.body.data.delivered.map((d: { source_id: string }) => d.source_id), settled]).toEqual([202, [theirs.static], false]);
    const done = await stuck;
    expect(done.status).toBe(202);
    expect(done.body.data.delivered.map((d: { source_id: string }) => d.source_id).sort()).toEqual([mine.static, mine.method].sort());
  });
});
