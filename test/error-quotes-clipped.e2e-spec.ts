import { admin, client, createUser, TestUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { DocOperation, fillPath, Json, operationsOf } from './support/openapi-requests';
import { rawRequest } from './support/raw-http';
import { startSystem, System } from './support/system';

/**
 * Every value a client chooses that an error quotes (an id, a key or a name in the path, the query or the body) is
 * quoted clipped: its first 100 characters and `…` (docs/api.md "Errors"). Generated from the served OpenAPI
 * document: each operation is called with the caller's own valid request, then with one path parameter or one
 * string field at a time replaced by a long value; no error answer may hold more than 100 characters of it.
 */
const STEP = 'export default { async run() { return 1; } };';
/** A path segment of 480 characters stays under the 500 the HTTP layer takes (414 past it). */
const IN_PATH = 480;
const IN_BODY = 10_000;
/** Fields whose long values are code or text a route stores or runs, not ids or names it looks up. */
const PREFIXES: Record<string, string> = { org_id: 'o_', keyOrId: 'sc_', component_id: 'sc_', source_id: 'dc_', emitter_id: 'dc_', listener_id: 'wh_' };
const NOT_QUOTED = new Set(['component_code', 'code', 'include', 'exclude']);

describe('errors quote client values clipped', () => {
  let system: System;
  let user: TestUser;
  let ops: DocOperation[];
  const own: Record<string, string> = {};

  beforeAll(async () => {
    system = await startSystem({ REGISTRY_DIR: 'off' }, { apps: ['api'] });
    user = createUser(system);
    const api = client(system, user.apiKey);
    const tag = user.id.slice(2, 10).toLowerCase();
    own.o = admin(system, ['orgs', 'create', '--name', 'org', '--orgname', `clip-${tag}`]).id;
    admin(system, ['orgs', 'add-member', '--org', own.o, '--user', user.id]);
    const component = (await api.post('/components', { component_code: HTTP_SOURCE })).body.data;
    own.sc = component.id;
    own.dc = (await api.post('/sources', { component_id: own.sc })).body.data.id;
    own.wh = (await api.post('/webhooks', { url: 'https://example.com/hook' })).body.data.id;
    own.p = (await api.post('/workflows', { name: 'flow', trigger: { manual: {} }, steps: [{ name: 's', code: STEP }] })).body.data.id;
    for (const [k, v] of Object.entries(own)) if (typeof v !== 'string') throw new Error(`fixture ${k}: ${String(v)}`);
    ops = operationsOf((await (await fetch(`${system.baseUrl}/openapi.json`)).json()) as Json).filter((op) => !op.public);
  }, 120_000);
  afterAll(async () => {
    await system?.stop();
  });

  /** The caller's own value of a path parameter. */
  const ownParam = (op: DocOperation, name: string): string => {
    if (name === 'org_id') return own.o;
    if (name === 'keyOrId') return own.sc;
    if (name === 'channel') return '$errors';
    if (name === 'id') return op.path.includes('/workflows/') || op.path.startsWith('/sse/p/') ? own.p : op.path.includes('/webhooks/') ? own.wh : own.dc;
    return { key: 'no-such-key', prop: 'http', app: 'github' }[name] ?? 'x';
  };

  /** The caller's own value of a body field the route needs besides the one replaced (undefined: left out). */
  const ownField = (op: DocOperation, name: string): unknown => {
    const path = op.path;
    switch (name) {
      case 'component_id': return path.includes('/sources') ? own.sc : undefined;
      case 'emitter_id': return own.dc;
      case 'listener_id': return own.wh;
      case 'event_name': return path.includes('auto_subscriptions') ? '$errors' : path.includes('subscriptions') ? '' : undefined;
      case 'url': return path.includes('/webhooks') ? 'https://example.com/hook' : undefined;
      case 'name': return path.includes('/workflows') ? 'flow' : undefined;
      case 'trigger': return { manual: {} };
      case 'steps': return [{ name: 's', code: STEP }];
      case 'event_id': return '1700000000000-0';
      default: return undefined;
    }
  };

  const send = async (method: string, path: string, query: Record<string, string>, body?: Json): Promise<{ status: number; text: string }> => {
    const qs = new URLSearchParams(query).toString();
    const ac = new AbortController();
    const res = await fetch(`${system.origin}${path}${qs ? `?${qs}` : ''}`, {
      method,
      headers: { authorization: `Bearer ${user.apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: ac.signal,
    });
    // An event stream is not an error: it is dropped at once.
    const text = res.headers.get('content-type')?.startsWith('text/event-stream') ? '' : await res.text();
    ac.abort();
    return { status: res.status, text };
  };

  it('clips a long id, key or name in every path parameter, query parameter and body field of every route', async () => {
    const failures: string[] = [];
    let probes = 0;
    for (const op of ops) {
      const params = Object.fromEntries(op.parameters.filter((p) => p.in === 'path').map((p) => [p.name, ownParam(op, p.name)]));
      const allBodyFields = Object.keys((op.body?.properties as Json | undefined) ?? {});
      const base: Json = Object.fromEntries(allBodyFields.map((n) => [n, ownField(op, n)]).filter(([, v]) => v !== undefined));
      const bodyFields = Object.entries((op.body?.properties as Record<string, Json> | undefined) ?? {}).filter(([, s]) => s.type === 'string').map(([n]) => n);
      const queryFields = op.parameters.filter((p) => p.in === 'query' && p.schema.type === 'string' && !allBodyFields.includes(p.name)).map((p) => p.name);
      const baseQuery = Object.fromEntries(queryFields.map((n) => [n, ownField(op, n)]).filter(([, v]) => v !== undefined)) as Record<string, string>;
      const schemaOf = (where: string, name: string): Json =>
        where === 'body' ? ((op.body?.properties as Record<string, Json>)[name] ?? {}) : (op.parameters.find((p) => p.in === where && p.name === name)?.schema ?? {});
      // As long as the declaration lets through (a longer one is refused before any look-up), at most the length given.
      const within = (where: string, name: string, most: number) => ({ where, name, length: Math.min(most, Number(schemaOf(where, name).maxLength ?? most) - 3) });
      const cases = [
        ...Object.keys(params).map((name) => within('path', name, IN_PATH)),
        ...queryFields.map((name) => within('query', name, IN_PATH)),
        ...bodyFields.map((name) => within('body', name, IN_BODY)),
      ].filter((c) => !NOT_QUOTED.has(c.name));
      for (const c of cases) {
        // An id keeps its kind's prefix, so it reaches the look-up rather than a check of its form.
        const prefix = c.name === 'id' ? `${ownParam(op, 'id').split('_')[0]}_` : (PREFIXES[c.name] ?? '');
        const value = prefix + 'q'.repeat(c.length);
        const path = fillPath(op.path, c.where === 'path' ? { ...params, [c.name]: value } : params);
        const query = c.where === 'query' ? { ...baseQuery, [c.name]: value } : baseQuery;
        const body = op.body ? (c.where === 'body' ? { ...base, [c.name]: value } : base) : undefined;
        const res = await send(op.method, path, query, body);
        probes++;
        const longest = Math.max(0, ...(res.text.match(/q+/g) ?? []).map((m) => m.length));
        if (res.status >= 500) failures.push(`${op.method} ${op.path} ${c.where} ${c.name}: ${res.status} ${res.text.slice(0, 200)}`);
        else if (res.status >= 400 && longest > 100) failures.push(`${op.method} ${op.path} ${c.where} ${c.name}: ${res.status} quotes ${longest} characters of it: ${res.text.slice(0, 160)}…`);
      }
    }
    expect(probes).toBeGreaterThan(60);
    expect(failures).toEqual([]);
  }, 300_000);

  it('clips the path a 404 no such route, a 405, an unknown HTTP endpoint and a missing dashboard file quote (they quoted up to 16 KB of it)', async () => {
    const segment = 'q'.repeat(IN_PATH);
    const deep = `/v1/${Array(20).fill(segment).join('/')}`;
    const cut = (text: string) => `${text.slice(0, 100)}…`;
    const noRoute = await send('GET', deep, {});
    expect([noRoute.status, JSON.parse(noRoute.text)]).toEqual([404, { error: `no such route: GET ${cut(deep)}`, code: 'not_found' }]);
    const otherMethod = await send('PATCH', `/v1/sources/dc_${segment}`, {});
    expect([otherMethod.status, JSON.parse(otherMethod.text)]).toEqual([405, { error: `PATCH is not allowed on ${cut(`/v1/sources/dc_${segment}`)}; allowed: GET, HEAD, PUT, DELETE`, code: 'method_not_allowed' }]);
    const endpoint = await fetch(`${system.origin}/e/en${segment}`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect([endpoint.status, await endpoint.json()]).toEqual([404, { error: `no active HTTP source at endpoint ${cut(`en${segment}`)}`, code: 'not_found' }]);
    const asset = await fetch(`${system.origin}/ui/assets/${segment}.js`);
    expect([asset.status, await asset.json()]).toEqual([404, { error: `no such file: ${cut(`/ui/assets/${segment}.js`)}`, code: 'not_found' }]);
  });

  it('clips the codings and expectation a 415 or 417 quotes from its header (Content-Encoding of 8 KB was quoted whole)', async () => {
    const coding = 'q'.repeat(8000);
    const cut = `${coding.slice(0, 100)}…`;
    const encoded = await fetch(`${system.baseUrl}/webhooks`, { method: 'POST', headers: { authorization: `Bearer ${user.apiKey}`, 'content-type': 'application/json', 'content-encoding': coding }, body: '{}' });
    expect([encoded.status, await encoded.json()]).toEqual([415, { error: `Content-Encoding ${cut} is not accepted: send the request body uncompressed`, code: 'unsupported_media_type', details: { header: 'content-encoding' } }]);
    const head = (extra: string) => `POST /v1/webhooks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user.apiKey}\r\nContent-Type: application/json\r\n${extra}`;
    const chunked = await rawRequest(system.origin, head(`Transfer-Encoding: ${coding}, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`));
    expect([chunked.status, JSON.parse(chunked.body)]).toEqual([415, { error: `Transfer-Encoding ${cut} is not accepted: send the request body with no transfer coding but chunked`, code: 'unsupported_media_type', details: { header: 'transfer-encoding' } }]);
    const expectation = await rawRequest(system.origin, head(`Expect: ${coding}\r\nContent-Length: 2\r\n\r\n`));
    expect([expectation.status, JSON.parse(expectation.body)]).toEqual([417, { error: `the Expect header asks for ${cut}: only 100-continue is supported`, code: 'expectation_failed', details: { header: 'expect' } }]);
  });

  it("clips the unknown prop names of configured_props and of a workflow step's props and lists at most 20 of them, and clips a workflow timer's cron (they were quoted whole)", async () => {
    const api = client(system, user.apiKey);
    const name = 'q'.repeat(10_000);
    const cut = `${name.slice(0, 100)}…`;
    const many = Object.fromEntries([name, ...Array.from({ length: 500 }, (_, i) => `p${i}`)].map((n) => [n, 1]));
    const listed = [cut, ...Array.from({ length: 19 }, (_, i) => `p${i}`)];
    const refused = { error: `configured_props has unknown props ${listed.join(', ')} and 481 more; the component's props are http, db`, code: 'invalid_props', details: { props: listed, more: 481 } };
    for (const res of [await api.post('/sources', { component_id: own.sc, configured_props: many }), await api.post(`/components/${own.sc}/props/reload`, { configured_props: many })]) {
      expect([res.status, res.body]).toEqual([400, refused]);
    }
    const step = await api.post('/workflows', { name: 'props', trigger: { manual: {} }, steps: [{ name: 's', code: STEP, props: many }] });
    expect([step.status, step.body]).toEqual([400, { error: `steps[0].props.${cut}: unknown props ${listed.join(', ')} and 481 more; the component's props are (none)`, code: 'invalid_workflow', details: { path: `steps[0].props.${cut}`, props: listed, more: 481 } }]);
    const cron = 'q'.repeat(900);
    const timer = await api.post('/workflows', { name: 'timer', trigger: { timer: { cron } }, steps: [{ name: 's', code: STEP }] });
    expect([timer.status, timer.body]).toEqual([400, { error: `trigger.timer.cron: cron must have 5 fields (minute hour day-of-month month day-of-week), got "${cron.slice(0, 100)}…"`, code: 'invalid_workflow', details: { path: 'trigger.timer.cron' } }]);
  });

  it('says a body sent with an empty Content-Type has none, as without the header (it said "Content-Type  is not accepted")', async () => {
    const res = await fetch(`${system.baseUrl}/webhooks`, { method: 'POST', headers: { authorization: `Bearer ${user.apiKey}`, 'content-type': '' }, body: '{"url":"https://example.com/hook"}' });
    expect([res.status, await res.json()]).toEqual([
      415,
      { error: 'the request body has no Content-Type: send it as application/json (or a type ending in +json, text/plain, application/x-www-form-urlencoded)', code: 'unsupported_media_type', details: { header: 'content-type' } },
    ]);
  });
});
