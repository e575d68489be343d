import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admin, client, createUser, TestUser } from './support/accounts';
import { rawRequest } from './support/raw-http';
import { startSystem, System } from './support/system';

/**
 * A hostile tenant against dynamic props: `POST /v1/components/{id}/props/reload` and the
 * `additionalProps()` a deploy or update calls. Another account's component answers 404; a registry
 * component's code runs in the caller's own sandbox (never the api's; an account's own component's in its
 * owner's, test/isolation-org-components); whatever `additionalProps()`
 * returns or does — huge, many, prototype keys, forbidden types, non-JSON values, throwing or endless
 * getters, endless loops — is a 4xx in the error shape `{ error, code }`, never a 5xx, a stored source
 * or an api that stops answering other accounts.
 */
const READ_TIMEOUT_MS = 5000;

/** A source whose additionalProps() runs `body` once `kind` is set. */
const dynamic = (body: string, name = 'Probe') =>
  `export default { name: ${JSON.stringify(name)}, version: "0.0.1", props: { kind: { type: "string", optional: true, reloadProps: true } }, async additionalProps(previous) { ${body} }, async run() {} };`;

/** Reports where additionalProps() runs: uid, environment, /tmp markers (written with the value of `mark`). */
const WHOSE_SANDBOX = `module.exports = {
  key: "probe-whose-sandbox", name: "Whose sandbox", version: "0.0.1", type: "source",
  props: { mark: { type: "string", reloadProps: true } },
  async additionalProps() {
    const fs = require("fs");
    fs.writeFileSync("/tmp/mark-" + this.mark.replace(/[^a-z0-9]/g, ""), "x");
    let environ;
    try { environ = fs.readFileSync("/proc/self/environ", "utf8").length + " bytes"; } catch (e) { environ = e.code; }
    let parent;
    try { parent = fs.readFileSync("/proc/1/environ", "utf8").length + " bytes"; } catch (e) { parent = e.code; }
    const report = { uid: process.getuid(), env: Object.keys(process.env), environ, parent, marks: fs.readdirSync("/tmp").filter((f) => f.startsWith("mark-")).sort() };
    return { report: { type: "string", optional: true, label: JSON.stringify(report) } };
  },
  async run() {},
};`;

type Res = { status: number; body: any; text: string }; // eslint-disable-line @typescript-eslint/no-explicit-any
type Report = { uid: number; env: string[]; environ: string; parent: string; marks: string[] };

/** A refusal: the status, the error shape, no stack trace. */
function expectRefused(res: Res, status: number, code?: string): void {
  expect([res.status, res.body]).toEqual([status, expect.objectContaining({ error: expect.any(String), code: code ?? expect.any(String) })]);
  expect(res.text).not.toMatch(/\n\s+at .+:\d+:\d+/);
}

describe('dynamic props attacked by a hostile tenant', () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;
  let registryId: string;
  let componentB: { id: string; key: string };
  const as = (u: TestUser) => client(system, u.apiKey);
  const names = (res: Res) => (res.body.data.configurable_props as { name: string }[]).map((p) => p.name);
  const report = (res: Res): Report => JSON.parse((res.body.data.configurable_props as { name: string; label: string }[]).find((p) => p.name === 'report')!.label) as Report;
  const save = async (u: TestUser, code: string): Promise<string> => {
    const res = await as(u).post('/components', { component_code: code });
    expect([res.status, res.text.slice(0, 300)]).toEqual([200, expect.any(String)]);
    return res.body.data.id as string;
  };

  beforeAll(async () => {
    system = await startSystem({ COMPONENT_READ_TIMEOUT_MS: String(READ_TIMEOUT_MS) });
    a = createUser(system);
    b = createUser(system);
    const file = join(mkdtempSync(join(tmpdir(), 'ess-registry-')), 'whose-sandbox.js');
    writeFileSync(file, WHOSE_SANDBOX);
    registryId = admin(system, ['registry', 'publish', file]).id;
    const saved = await as(b).post('/components', { component_code: dynamic('return { secretOfB: { type: "string", label: "b-private-label" } };', 'B private').replace('name:', 'key: "b-private-dynamic", name:') });
    expect(saved.status).toBe(200);
    componentB = { id: saved.body.data.id, key: saved.body.data.key };
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("answers 404 for another account's private component on every dynamic-props route, as for an unknown id", async () => {
    const unknown = 'sc_doesnotexist0000000';
    const probes: [string, (id: string) => Promise<Res>][] = [
      ['reload', (id) => as(a).post(`/components/${id}/props/reload`, { configured_props: { kind: 'x' } })],
      ['reload (query)', (id) => as(a).post(`/components/${id}/props/reload?configured_props=${encodeURIComponent('{"kind":"x"}')}`)],
      ['added prop options', (id) => as(a).post(`/components/${id}/props/secretOfB/options`, { configured_props: { kind: 'x' } })],
      ['deploy', (id) => as(a).post('/sources', { component_id: id, configured_props: { kind: 'x' } })],
    ];
    for (const [what, probe] of probes) {
      const theirs = await probe(componentB.id);
      const none = await probe(unknown);
      expectRefused(theirs, 404, 'not_found');
      // Nothing tells B's component from one that does not exist.
      expect([what, theirs.status, theirs.text.replaceAll(componentB.id, 'ID')]).toEqual([what, none.status, none.text.replaceAll(unknown, 'ID')]);
      expect(theirs.text).not.toContain('b-private-label');
    }
    expectRefused(await as(a).post(`/components/${componentB.key}/props/reload`, { configured_props: { kind: 'x' } }), 404, 'not_found');
    expectRefused(await as(a).post(`/components/${componentB.key}/props/reload?org_id=${b.id}`, {}), 404, 'not_found');
    expectRefused(await as(a).post(`/components/${componentB.id}/props/reload`, { org_id: b.id }), 404, 'not_found');
    // B still reloads its own.
    const own = await as(b).post(`/components/${componentB.id}/props/reload`, { configured_props: { kind: 'x' } });
    expect([own.status, names(own)]).toEqual([200, ['kind', 'secretOfB']]);
  });

  it("runs a registry component's additionalProps() in the caller's own sandbox, never the owner's or the api's", async () => {
    const reloadA = await as(a).post(`/components/${registryId}/props/reload`, { configured_props: { mark: 'a' } });
    const reloadB = await as(b).post(`/components/${registryId}/props/reload`, { configured_props: { mark: 'b' } });
    expect([reloadA.status, reloadB.status]).toEqual([200, 200]);
    const [ra, rb] = [report(reloadA), report(reloadB)];
    // Not the api's process: no environment, no way to read one, not the api's uid.
    for (const r of [ra, rb]) {
      expect(r.env).toEqual([]);
      expect(r.environ).toBe('ERR_ACCESS_DENIED');
      expect(r.parent).toBe('ERR_ACCESS_DENIED');
      expect(r.uid).not.toBe(process.getuid?.());
    }
    // Each caller's own sandbox: its own uid and its own /tmp (B does not see A's marker).
    expect(ra.uid).not.toBe(rb.uid);
    expect(ra.marks).toEqual(['mark-a']);
    expect(rb.marks).toEqual(['mark-b']);
    // A's own component runs in the same sandbox as the registry's did for A.
    const mine = await save(a, WHOSE_SANDBOX.replace('probe-whose-sandbox', 'a-whose-sandbox'));
    const own = report(await as(a).post(`/components/${mine}/props/reload`, { configured_props: { mark: 'a2' } }));
    expect([own.uid, own.marks]).toEqual([ra.uid, ['mark-a', 'mark-a2']]);
    // A deploy of the registry component calls it in the deployer's sandbox too.
    const deployed = await as(b).post('/sources', { component_id: registryId, configured_props: { mark: 'b2' } });
    expect(deployed.status).toBe(200);
    expect(report(deployed)).toMatchObject({ uid: rb.uid, marks: ['mark-b', 'mark-b2'] });
  });

  it('refuses whatever additionalProps() returns or does that is not a set of props, with a 4xx, on reload and on deploy alike', async () => {
    type Expected = { status: 200; props: unknown[] } | { status: 400; code: string; error: RegExp };
    const ok = (props: unknown[]): Expected => ({ status: 200, props });
    const refused = (code: string, error: RegExp): Expected => ({ status: 400, code, error });
    const cases: [string, string, Expected][] = [
      ['a huge description', 'return { x: { type: "string", optional: true, description: "x".repeat(30 * 1024 * 1024) } };', refused('additional_props_failed', /^additionalProps\(\) failed: the props it returned are \d+ bytes of JSON; at most 262144 may be added$/)],
      ['a huge options list', 'return { x: { type: "string", optional: true, options: Array.from({ length: 100000 }, (_, i) => "option-" + i) } };', refused('additional_props_failed', /at most 262144 may be added/)],
      ['20,000 props', 'const o = {}; for (let i = 0; i < 20000; i++) o["p" + i] = { type: "string", optional: true }; return o;', refused('additional_props_failed', /^additionalProps\(\) failed: it returned 20000 props; at most 200 may be added$/)],
      ['__proto__ (JSON.parse)', 'return JSON.parse(\'{"__proto__": {"type": "string", "optional": true}}\');', refused('invalid_props', /^additionalProps\(\): prop "__proto__": every JavaScript object has a member named "__proto__"; choose another name$/)],
      ['__proto__ (defineProperty)', 'const o = {}; Object.defineProperty(o, "__proto__", { value: { type: "object", optional: true }, enumerable: true }); return o;', refused('invalid_props', /prop "__proto__": every JavaScript object has a member/)],
      ['constructor', 'return { constructor: { type: "string", optional: true } };', refused('invalid_props', /prop "constructor": every JavaScript object has a member/)],
      ['toString', 'return { toString: { type: "string", optional: true } };', refused('invalid_props', /prop "toString": every JavaScript object has a member/)],
      ['$.service.db', 'return { store: { type: "$.service.db" } };', refused('invalid_props', /prop "store": \$\.service\.db cannot be added by additionalProps\(\), only declared in props/)],
      ['$.service.db shorthand', 'return { store: "$.service.db" };', refused('invalid_props', /\$\.service\.db cannot be added/)],
      ['dir', 'return { files: { type: "dir" } };', refused('invalid_props', /prop "files": dir cannot be added/)],
      ['$.interface.http', 'return { hook: { type: "$.interface.http" } };', refused('invalid_props', /\$\.interface\.http cannot be added/)],
      ['$.interface.apphook', 'return { hook: { type: "$.interface.apphook", appProp: "x", eventNames: ["a"] } };', refused('invalid_props', /\$\.interface\.apphook cannot be added/)],
      ['a NUL in a name', 'return { ["a\\u0000b"]: { type: "string", optional: true } };', refused('invalid_props', /NUL character/)],
      ['a NUL in a label', 'return { x: { type: "string", optional: true, label: "a\\u0000b" } };', refused('invalid_props', /NUL character/)],
      ['a default nested 3,000 deep', 'let d = {}; const root = d; for (let i = 0; i < 3000; i++) { d.a = {}; d = d.a; } return { x: { type: "object", optional: true, default: root } };', refused('additional_props_failed', /nested deeper than 100 levels/)],
      ['a getter that throws', 'return { get x() { throw new Error("boom getter"); } };', refused('additional_props_failed', /^additionalProps\(\) failed: boom getter$/)],
      ['a field getter that throws', 'return { x: { get type() { throw new Error("boom field"); } } };', refused('additional_props_failed', /boom field/)],
      ['a getter that never returns', 'return { get x() { for (;;) {} } };', refused('additional_props_failed', /timed out/)],
      ['a proxy whose keys throw', 'return new Proxy({}, { ownKeys() { throw new Error("boom keys"); } });', refused('additional_props_failed', /boom keys/)],
      ['an endless loop', 'for (;;) {}', refused('additional_props_failed', /timed out/)],
      ['a promise that never settles', 'await new Promise(() => {});', refused('additional_props_failed', /timed out/)],
      ['a 5 MB error message', 'throw new Error("e".repeat(5 * 1024 * 1024));', refused('additional_props_failed', /^additionalProps\(\) failed: e{2000}…$/)],
      ['an error whose message throws', 'const e = new Error(); Object.defineProperty(e, "message", { get() { throw new Error("again"); } }); throw e;', refused('additional_props_failed', /cannot be read/)],
      ['a string', 'return "props";', refused('additional_props_failed', /must return an object of prop definitions/)],
      ['non-JSON values', 'return { x: { type: "integer", optional: true, default: 10n, label: Symbol("s"), description: undefined, min: NaN } };', ok([{ name: 'x', type: 'integer', optional: true }])],
      ['names of static props', 'previous.kind.type = "integer"; return { kind: { type: "integer" }, other: { type: "string", optional: true } };', ok([{ name: 'other', type: 'string', optional: true }])],
      ['200 props', 'const o = {}; for (let i = 0; i < 200; i++) o["p" + i] = { type: "string", optional: true }; return o;', ok(Array.from({ length: 200 }, (_, i) => ({ name: `p${i}`, type: 'string', optional: true })))],
    ];
    const before = (await as(a).get('/users/me/sources')).body.data.length;
    for (const [what, body, expected] of cases) {
      const id = await save(a, dynamic(body));
      const reload = await as(a).post(`/components/${id}/props/reload`, { configured_props: { kind: 'x' } });
      const deploy = await as(a).post('/sources', { component_id: id, configured_props: { kind: 'x' } });
      for (const [route, res] of [['reload', reload], ['deploy', deploy]] as const) {
        if (expected.status === 400) {
          expect([what, route, res.status, res.body?.code]).toEqual([what, route, 400, expected.code]);
          expectRefused(res, 400, expected.code);
          expect([what, route, res.body.error]).toEqual([what, route, expect.stringMatching(expected.error)]);
          expect(res.text.length).toBeLessThan(4096);
        } else {
          expect([what, route, res.status]).toEqual([what, route, 200]);
          const props = res.body.data.configurable_props;
          expect([what, props[0]]).toEqual([what, { name: 'kind', type: 'string', optional: true, reloadProps: true }]);
          expect([what, props.slice(1)]).toEqual([what, expected.props]);
        }
      }
      if (expected.status === 200) await as(a).del(`/sources/${deploy.body.data.id}`);
      expect([what, (await fetch(`${system.origin}/healthz`)).status]).toEqual([what, 200]);
    }
    expect((await as(a).get('/users/me/sources')).body.data.length).toBe(before);
  });

  it('refuses the same on update, keeping the source as it was', async () => {
    const good = await save(a, dynamic('return this.kind === "many" ? Object.fromEntries(Array.from({ length: 500 }, (_, i) => ["p" + i, { type: "string", optional: true }])) : this.kind === "db" ? { s: "$.service.db" } : { extra: { type: "string", optional: true } };'));
    const created = await as(a).post('/sources', { component_id: good, configured_props: { kind: 'fine' } });
    expect(created.status).toBe(200);
    const id = created.body.data.id;
    for (const [kind, code] of [['many', 'additional_props_failed'], ['db', 'invalid_props']]) {
      expectRefused(await as(a).put(`/sources/${id}`, { component_id: good, configured_props: { kind } }), 400, code);
    }
    const still = await as(a).get(`/sources/${id}`);
    expect([still.body.data.configured_props.kind, names(still)]).toEqual(['fine', ['kind', 'extra']]);
  });

  it("keeps answering other accounts while one account's additionalProps() never returns", async () => {
    const hang = await save(a, dynamic('for (;;) {}'));
    const fine = await save(b, dynamic('return { extra: { type: "string", optional: true } };'));
    // B's sandbox is already running: what is measured is the api, not a first start.
    expect((await as(b).post(`/components/${fine}/props/reload`, { configured_props: { kind: 'x' } })).status).toBe(200);
    let settled = false;
    const stuck = Promise.all([1, 2, 3].map(() => as(a).post(`/components/${hang}/props/reload`, { configured_props: { kind: 'x' } }))).finally(() => {
      settled = true;
    });
    await new Promise((r) => setTimeout(r, 300));
    const other = await as(b).post(`/components/${fine}/props/reload`, { configured_props: { kind: 'y' } });
    const health = await fetch(`${system.origin}/healthz`);
    const list = await as(b).get('/users/me/sources');
    expect([other.status, names(other), health.status, list.status, settled]).toEqual([200, ['kind', 'extra'], 200, 200, false]);
    for (const res of await stuck) expectRefused(res, 400, 'additional_props_failed');
  });

  it('checks the request body: not an object, deeply nested, huge, prototype keys', async () => {
    const id = await save(a, dynamic('return this.kind ? { extra: { type: "string", optional: true, label: String(this.kind).slice(0, 20) } } : {};'));
    const reload = (body: unknown) => as(a).post(`/components/${id}/props/reload`, body);
    for (const bad of [[], 'x', 5, [1], { configured_props: 'x' }, { configured_props: [] }, { configured_props: 5 }, { configured_props: { kind: 5 } }, { configured_props: { kind: { a: 1 } } }]) {
      const res = await reload(bad);
      expect([JSON.stringify(bad), res.status]).toEqual([JSON.stringify(bad), 400]);
      expectRefused(res, 400);
    }
    let deep: unknown = 'x';
    for (let i = 0; i < 101; i++) deep = [deep];
    expectRefused(await reload({ configured_props: { kind: deep } }), 400);
    const deepText = `{"configured_props":${'{"a":'.repeat(5000)}{}${'}'.repeat(5000)}}`;
    const deepRes = await fetch(`${system.baseUrl}/components/${id}/props/reload`, { method: 'POST', headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json' }, body: deepText });
    const deepBody = await deepRes.text();
    expectRefused({ status: deepRes.status, body: JSON.parse(deepBody), text: deepBody }, 400);
    expectRefused(await reload({ configured_props: { kind: 'k'.repeat(70 * 1024) } }), 413, 'payload_too_large');
    const huge = await rawRequest(system.origin, `POST /v1/components/${id}/props/reload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.apiKey}\r\nContent-Type: application/json\r\nContent-Length: 500000000\r\n\r\n{"configured_props":`);
    expectRefused({ status: huge.status, body: JSON.parse(huge.body), text: huge.body }, 413);
    // Keys every object has are no prop's value: ignored by a reload, unknown to a deploy.
    const proto = JSON.parse('{"configured_props": {"__proto__": {"kind": "polluted"}, "constructor": "c", "toString": "t"}}') as unknown;
    const res = await reload(proto);
    expect([res.status, res.body.data.configurable_props]).toEqual([200, [{ name: 'kind', type: 'string', optional: true, reloadProps: true }]]);
    const deploy = await as(a).post('/sources', { component_id: id, ...(proto as object) });
    expectRefused(deploy, 400, 'invalid_props');
    expect(({} as { kind?: unknown }).kind).toBeUndefined();
    const fine = await reload({ configured_props: { kind: 'ok' } });
    expect([fine.status, names(fine)]).toEqual([200, ['kind', 'extra']]);
  });
});
