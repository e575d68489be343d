import { admin, client, createUser, TestUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { rawRequest } from './support/raw-http';
import { startSystem, System } from './support/system';

/** The error body every failure has, from every layer. */
const errorShape = (code?: string) => ({ error: expect.any(String), code: code ?? expect.any(String) });

function expectErrorBody(body: unknown, code?: string): void {
  expect(body).toMatchObject(errorShape(code));
  expect(Object.keys(body as object).every((k) => ['error', 'code', 'details'].includes(k))).toBe(true);
}

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

describe('API input hardening: client-chosen input is a 4xx, never a 500', () => {
  let system: System;
  let user: TestUser;
  let api: ReturnType<typeof client>;
  let sourceId: string;
  let componentId: string;

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
    user = createUser(system);
    api = client(system, user.apiKey);
    const c = await api.post('/components', { component_code: HTTP_SOURCE });
    componentId = c.body.data.id;
    sourceId = (await api.post('/sources', { component_id: componentId })).body.data.id;
  });
  afterAll(async () => {
    await system?.stop();
  });

  it.each([
    ['GET', '/sources/dc_%00'],
    ['GET', '/components/sc_%00x'],
    ['GET', '/webhooks/wh_%00'],
    ['GET', `/sources/SRC/event_summaries?event_name=a%00b`],
    ['GET', '/users/me/sources?after=%00'],
    ['POST', '/sources?component_id=sc_%00'],
  ])('refuses a NUL byte in the URL: %s %s', async (method, path) => {
    const res = await (method === 'GET' ? api.get(path.replace('SRC', sourceId)) : api.post(path));
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 'invalid_request');
  });

  it.each([
    ['/sources', { component_id: 'sc_\u0000' }],
    ['/sources', { component_id: 'COMPONENT', name: 'a\u0000b' }],
    ['/webhooks', { url: 'https://example.com/h', name: 'n\u0000' }],
    ['/webhooks', { url: 'https://example.com/h', description: '\u0000' }],
    ['/subscriptions', { emitter_id: 'dc_x', listener_id: 'dc_y', event_name: '\u0000' }],
  ])('refuses a NUL character in a JSON body string: POST %s', async (path, body) => {
    const res = await api.post(path, JSON.parse(JSON.stringify(body).replace('COMPONENT', componentId)));
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 'invalid_request');
    expect(res.body.error).toMatch(/NUL/);
  });

  it('refuses a lone UTF-16 surrogate in a JSON body string (Postgres would keep U+FFFD, not what was answered), and keeps a whole pair', async () => {
    for (const name of ['\udfff', 'a\ud800', '\ud800\u0041']) {
      const res = await api.post('/webhooks', { url: 'https://example.com/h', name });
      expect([res.status, res.body.code, res.body.details?.reason]).toEqual([400, 'invalid_request', 'lone_surrogate']);
    }
    const put = await api.put(`/sources/${sourceId}`, { name: '\ud800' });
    expect([put.status, put.body.details?.reason]).toEqual([400, 'lone_surrogate']);
    const pair = await api.post('/webhooks', { url: 'https://example.com/h', name: 'smile \ud83d\ude00' });
    expect(pair.status).toBe(200);
    expect((await api.get(`/webhooks/${pair.body.data.id}`)).body.data.name).toBe('smile \u{1F600}');
  });

  it('reads a number in the query string only when written in digits, and a parameter given twice says so', async () => {
    for (const days of ['%2B1', '%201', '1%20', '%E2%80%AF1', '1e0', '0x1', '1.0']) {
      const res = await api.get(`/users/me/usage?days=${days}`);
      expect([days, res.status, res.body.code, res.body.details?.field]).toEqual([days, 400, 'invalid_request', 'days']);
    }
    expect((await api.get('/users/me/usage?days=7')).status).toBe(200);
    const twice = await api.get('/users/me/usage?days=1&days=2');
    expect([twice.status, twice.body.error]).toEqual([400, 'days was given more than once']);
    expect((await api.get(`/sources/${sourceId}/event_summaries?limit=%2B5`)).status).toBe(400);
  });

  it('refuses an empty, blank or non-digit integer query value as not written in digits (it was read as 0: "limit must be >= 1")', async () => {
    const cases: [string, string, string][] = [
      [`/sources/${sourceId}/event_summaries?limit=%20`, 'limit', ' '],
      [`/sources/${sourceId}/event_summaries?limit=%09`, 'limit', '\t'],
      [`/sources/${sourceId}/event_summaries?limit=`, 'limit', ''],
      ['/users/me/sources?limit=%20%20', 'limit', '  '],
      ['/users/me/webhooks?limit=ten', 'limit', 'ten'],
      ['/users/me/usage?days=%20', 'days', ' '],
      ['/users/me/usage?days=', 'days', ''],
    ];
    for (const [path, field, value] of cases) {
      const res = await api.get(path);
      expect([path, res.status, res.body]).toEqual([path, 400, { error: `${field} must be an integer written in digits`, code: 'invalid_request', details: { in: 'query', field, value } }]);
    }
    expect((await api.get(`/sources/${sourceId}/event_summaries?limit=5`)).status).toBe(200);
  });

  it('refuses a component whose name or props carry a NUL character, and keeps one that only writes the escape', async () => {
    const named = await api.post('/components', { component_code: 'module.exports = { name: "a\\u0000b", version: "1", async run() {} };' });
    expect(named.status).toBe(400);
    expect(named.body).toMatchObject({ code: 'invalid_component', details: { reason: 'nul_character' } });
    const prop = await api.post('/components', { component_code: 'module.exports = { name: "p", version: "1", props: { s: { type: "string", label: "x\\u0000" } }, async run() {} };' });
    expect(prop.status).toBe(400);
    const escaped = await api.post('/components', { component_code: 'module.exports = { name: "esc", version: "1", async run() { return "a\\u0000b".length; } };' });
    expect(escaped.status).toBe(200);
  });

  it('refuses a component whose code makes a lone UTF-16 surrogate in what is read from it, or in the props additionalProps() returns (a 500 before)', async () => {
    // The request body cannot carry one (refused above), but the component's code can make one as it is read.
    const lone = 'String.fromCharCode(0xd800)';
    const shapes = [
      `{ name: "n" + ${lone}, version: "1", props: {}, async run() {} }`,
      `{ key: "k" + ${lone}, name: "n", version: "1", props: {}, async run() {} }`,
      `{ name: "n", version: "1", description: "d" + ${lone}, props: {}, async run() {} }`,
      `{ name: "n", version: "1", props: { s: { type: "string", label: "l" + ${lone} } }, async run() {} }`,
      `{ name: "n", version: "1", props: { ["p" + ${lone}]: { type: "string" } }, async run() {} }`,
      `{ name: "n", version: "1", props: { s: { type: "string", options: ["o" + ${lone}] } }, async run() {} }`,
      `{ name: "n", version: "1", props: {}, methods: { ["m" + ${lone}]() {} }, async run() {} }`,
    ];
    for (const shape of shapes) {
      const code = `module.exports = ${shape};`;
      for (const path of ['/components', '/sources']) {
        const res = await api.post(path, { component_code: code });
        expect([shape, path, res.status, res.body.code, res.body.details?.reason]).toEqual([shape, path, 400, 'invalid_component', 'lone_surrogate']);
        expect(res.body.error).toMatch(/lone UTF-16 surrogate/);
      }
    }
    const added = `module.exports = { name: "n", version: "1", props: { a: { type: "string", reloadProps: true, optional: true } },
      async additionalProps() { return { ["x" + ${lone}]: { type: "string", label: "l", optional: true } }; }, async run() {} };`;
    const source = await api.post('/sources', { component_code: added });
    expect([source.status, source.body.code, source.body.details?.reason]).toEqual([400, 'invalid_props', 'lone_surrogate']);
    // A whole pair is a character like any other.
    const pair = await api.post('/components', { component_code: 'module.exports = { name: "smile " + String.fromCharCode(0xd83d, 0xde00), version: "1", props: { s: { type: "string", label: String.fromCharCode(0xd83d, 0xde00) } }, async run() {} };' });
    expect([pair.status, pair.body.data?.name]).toEqual([200, 'smile \u{1F600}']);
  });

  it('refuses an event-summary cursor of the wrong shape', async () => {
    for (const value of [[1, 'x'], [1.5, '0'], ['1', '0'], [1], { k: 1 }, [-1, '0'], [1e300, '0']]) {
      const cursor = Buffer.from(JSON.stringify(value)).toString('base64url');
      const res = await api.get(`/sources/${sourceId}/event_summaries?after=${cursor}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'after is not a valid cursor', code: 'invalid_request', details: { in: 'query', field: 'after' } });
    }
    const sources = await api.get(`/users/me/sources?before=${Buffer.from(JSON.stringify([1.5, 'dc_x'])).toString('base64url')}`);
    expect(sources.status).toBe(400);
  });

  it('refuses JSON nested deeper than 100 levels (10,000 here) in configured_props and in a prop options body', async () => {
    const deep = `{"component_id":"${componentId}","configured_props":{"x":${nested(10_000)}}}`;
    const res = await fetch(`${system.baseUrl}/sources`, { method: 'POST', headers: { authorization: `Bearer ${user.apiKey}`, 'content-type': 'application/json' }, body: deep });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string };
    expectErrorBody(body, 'invalid_request');
    expect(body.error).toBe('the request body is nested deeper than 100 levels');
    const options = await fetch(`${system.baseUrl}/components/${componentId}/props/http/options`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.apiKey}`, 'content-type': 'application/json' },
      body: `{"configured_props":{"a":${nested(20_000)}}}`,
    });
    expect(options.status).toBe(400);
    // In the query string (JSON text of an object parameter) too.
    const inQuery = await api.post(`/sources?component_id=${componentId}&configured_props=${encodeURIComponent(`{"x":${nested(500)}}`)}`);
    expect(inQuery.status).toBe(400);
    expect(inQuery.body.error).toBe('configured_props is nested deeper than 100 levels');
    // 100 levels are fine (the body object, configured_props, then 98 arrays).
    const ok = await api.post('/components/' + componentId + '/props/http/options', { configured_props: { a: JSON.parse(nested(98)) } });
    expect(ok.status).toBe(200);
  });

  it('refuses broken percent-encoding in the query string as in the path (it was kept as written: name "a%zzb"), on every API route', async () => {
    const refused = { error: 'the URL is not valid (bad percent-encoding)', code: 'invalid_request' };
    const inPath = await rawRequest(system.origin, `GET /v1/sources/dc_%ff HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user.apiKey}\r\n\r\n`);
    expect([inPath.status, JSON.parse(inPath.body)]).toEqual([400, refused]);
    const cases: [string, string][] = [
      ['POST', '/v1/webhooks?url=http://x.com&name=a%zzb'],
      ['POST', '/v1/webhooks?url=http://x.com&name=a%2'],
      ['POST', '/v1/webhooks?url=http://x.com&name=a%C3%A9%ffb'],
      ['POST', '/v1/webhooks?url=http://x.com&name=a%C3'],
      ['POST', '/v1/webhooks?url=http://x.com&a%zz=1'],
      ['POST', '/v1/subscriptions?emitter_id=SRC&listener_id=dc_y&event_name=ch%ff'],
      ['GET', '/v1/sources/SRC/event_summaries?event_name=a%ff'],
      ['GET', '/v1/users/me?x=%ED%A0%80'],
      ['GET', '/sse/dc/SRC/emits?expand=%e'],
    ];
    for (const [method, path] of cases) {
      const res = await rawRequest(system.origin, `${method} ${path.replace('SRC', sourceId)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user.apiKey}\r\nContent-Length: 0\r\n\r\n`);
      expect([path, res.status, JSON.parse(res.body)]).toEqual([path, 400, refused]);
    }
    // Well-formed escapes, `+` and a repeated parameter are read as before.
    const ok = await api.post('/webhooks?url=http://x.com&name=a%C3%A9+b%2B');
    expect([ok.status, ok.body.data?.name]).toEqual([200, 'aé b+']);
    const twice = await api.post('/webhooks?url=http://x.com&name=a&name=b%zz');
    expect([twice.status, twice.body.error]).toEqual([400, 'the URL is not valid (bad percent-encoding)']);
    const repeated = await api.post('/webhooks?url=http://x.com&name=a&name=b');
    expect([repeated.status, repeated.body.error]).toEqual([400, 'name was given more than once']);
    // The HTTP interface of a source relays its query as sent, and the dashboard's pages read their own.
    const endpoint: string = (await api.get(`/sources/${sourceId}`)).body.data.configured_props.http.endpoint_url;
    expect((await fetch(`${endpoint}?q=a%zzb&r=%ff`, { method: 'POST' })).status).toBe(200);
    expect((await fetch(`${system.origin}/ui/?q=%ff`)).status).toBe(200);
  });

  it('gives ten parallel creates of one component ten distinct slugs', async () => {
    const results = await Promise.all(Array.from({ length: 10 }, () => api.post('/sources', { component_id: componentId, name: 'Same Name' })));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    const slugs = results.map((r) => r.body.data.name_slug as string).sort();
    expect(new Set(slugs).size).toBe(10);
    expect(slugs).toContain('same-name');
    expect(slugs).toContain('same-name-9');
  });
});

describe('API error bodies from every layer', () => {
  let system: System;
  let user: TestUser;

  beforeAll(async () => {
    system = await startSystem({ HTTP_REQUEST_TIMEOUT_MS: '2000' }, { apps: ['api'] });
    user = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const auth = (): Record<string, string> => ({ authorization: `Bearer ${user.apiKey}` });

  it('malformed JSON → 400', async () => {
    const res = await fetch(`${system.baseUrl}/sources`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: '{"component_id":' });
    expect(res.status).toBe(400);
    expectErrorBody(await res.json(), 'invalid_request');
  });

  it('a request not sent whole within HTTP_REQUEST_TIMEOUT_MS → 408 and the connection closed (before, never: connections held every file descriptor)', async () => {
    const res = await rawRequest(system.origin, `POST /v1/sources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user.apiKey}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nConnection: keep-alive\r\n\r\n{"component_code":"`);
    expect(res.status).toBe(408);
    expectErrorBody(JSON.parse(res.body), 'request_timeout');
  });

  it('unsupported media type → 415', async () => {
    const res = await fetch(`${system.baseUrl}/sources`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/xml' }, body: '<a/>' });
    expect(res.status).toBe(415);
    expectErrorBody(await res.json(), 'unsupported_media_type');
  });

  it('body too large → 413', async () => {
    // The announced length is refused before any of the body is read (sending 12 MiB would race the server's answer).
    const res = await rawRequest(system.origin, `POST /v1/sources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user.apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${12 * 1024 * 1024}\r\n\r\n{"component_code":"`);
    expect(res.status).toBe(413);
    expectErrorBody(JSON.parse(res.body), 'payload_too_large');
  });

  it('headers too large → 431, a URL or a path segment too long → 414, a broken URL encoding → 400', async () => {
    const big = await rawRequest(system.origin, `GET /v1/users/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(big.status).toBe(431);
    expectErrorBody(JSON.parse(big.body), 'header_too_large');
    const hugeUrl = await rawRequest(system.origin, `GET /v1/users/me?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(hugeUrl.status).toBe(414);
    expectErrorBody(JSON.parse(hugeUrl.body), 'uri_too_long');
    const long = await rawRequest(system.origin, `GET /v1/sources/${'a'.repeat(600)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user.apiKey}\r\n\r\n`);
    expect(long.status).toBe(414);
    expectErrorBody(JSON.parse(long.body), 'uri_too_long');
    const bad = await rawRequest(system.origin, `GET /v1/sources/%E0%A4%A HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user.apiKey}\r\n\r\n`);
    expect(bad.status).toBe(400);
    expectErrorBody(JSON.parse(bad.body), 'invalid_request');
    const garbage = await rawRequest(system.origin, `NOT HTTP AT ALL\r\n\r\n`);
    expect(garbage.status).toBe(400);
    expectErrorBody(JSON.parse(garbage.body), 'invalid_request');
  });

  it('no such route → 404, a known path with another method → 405 with Allow', async () => {
    const none = await fetch(`${system.baseUrl}/nothing-here`, { headers: auth() });
    expect(none.status).toBe(404);
    expectErrorBody(await none.json(), 'not_found');
    const patch = await fetch(`${system.baseUrl}/sources/dc_x`, { method: 'PATCH', headers: auth() });
    expect(patch.status).toBe(405);
    expect(patch.headers.get('allow')).toBe('GET, HEAD, PUT, DELETE');
    expectErrorBody(await patch.json(), 'method_not_allowed');
  });

  it('lists HEAD in the Allow header of a 405 wherever GET is allowed (HEAD answers there), the SSE streams included', async () => {
    for (const [method, url, allow] of [
      ['OPTIONS', `${system.baseUrl}/users/me`, 'GET, HEAD'],
      ['POST', `${system.origin}/sse/dc/dc_x/emits`, 'GET, HEAD'],
      ['DELETE', `${system.baseUrl}/users/me/sources`, 'GET, HEAD'],
      ['GET', `${system.baseUrl}/webhooks`, 'POST'],
    ]) {
      const res = await fetch(url, { method, headers: auth() });
      const path = new URL(url).pathname;
      expect([method, url, res.status, res.headers.get('allow'), await res.json()]).toEqual([method, url, 405, allow, { error: `${method} is not allowed on ${path}; allowed: ${allow}`, code: 'method_not_allowed' }]);
    }
    expect((await fetch(`${system.baseUrl}/users/me`, { method: 'HEAD', headers: auth() })).status).toBe(200);
  });

  it('two Authorization headers → 400', async () => {
    const res = await rawRequest(system.origin, `GET /v1/users/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user.apiKey}\r\nAuthorization: Bearer other\r\n\r\n`);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toEqual({ error: 'send one Authorization header, not several', code: 'invalid_request', details: { header: 'authorization' } });
  });
});

describe('API input rules on every route', () => {
  let system: System;
  let user: TestUser;
  let api: ReturnType<typeof client>;
  let sourceId: string;
  let componentId: string;
  let webhookId: string;
  let foreignOrg: string;

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
    user = createUser(system);
    api = client(system, user.apiKey);
    componentId = (await api.post('/components', { component_code: HTTP_SOURCE })).body.data.id;
    sourceId = (await api.post('/sources', { component_id: componentId })).body.data.id;
    webhookId = (await api.post('/webhooks', { url: 'https://example.com/h' })).body.data.id;
    foreignOrg = admin(system, ['orgs', 'create', '--name', 'Other', '--orgname', `other-${user.id.slice(3, 10)}`, '--email', 'o@other.test']).id;
  });
  afterAll(async () => {
    await system?.stop();
  });

  const routes = (): [string, string, unknown?][] => [
    ['POST', `/sources/${sourceId}/run`, {}],
    ['GET', `/webhooks/${webhookId}`],
    ['DELETE', `/webhooks/${webhookId}`],
    ['GET', '/users/me'],
    ['DELETE', `/sources/${sourceId}/events`],
    ['GET', `/sources/${sourceId}`],
    ['GET', `/components/${componentId}`],
  ];
  const call = (method: string, path: string, body?: unknown) =>
    method === 'GET' ? api.get(path) : method === 'DELETE' ? api.del(path) : method === 'PUT' ? api.put(path, body) : api.post(path, body);

  it('refuses unknown query parameters everywhere (the common ones always allowed)', async () => {
    for (const [method, path, body] of routes()) {
      const res = await call(method, `${path}?bogus=1`, body);
      expect([method, path, res.status]).toEqual([method, path, 400]);
      expect(res.body).toMatchObject({ error: 'unknown query parameter: bogus', code: 'invalid_request', details: { in: 'query', fields: ['bogus'] } });
      const common = await api.get(`/sources/${sourceId}?include=id&exclude=name`);
      expect(common.status).toBe(200);
    }
    // The SSE routes too (refused before the stream opens).
    for (const kind of ['emits', 'observations']) {
      const res = await fetch(`${system.origin}/sse/dc/${sourceId}/${kind}?bogus=1`, { headers: { authorization: `Bearer ${user.apiKey}` } });
      expect(res.status).toBe(400);
      expectErrorBody(await res.json(), 'invalid_request');
    }
  });

  it('answers 404 for an org_id the caller is not a member of, on routes with a resource id too', async () => {
    for (const [method, path, body] of [...routes(), ['GET', `/sources/${sourceId}/event_summaries`] as [string, string]]) {
      if (method === 'DELETE') continue;
      const res = await call(method, `${path}?org_id=${foreignOrg}`, body);
      expect([method, path, res.status]).toEqual([method, path, 404]);
      expect(res.body).toEqual({ error: `org ${foreignOrg} not found`, code: 'not_found', details: { org_id: foreignOrg } });
    }
    expect((await api.del(`/webhooks/${webhookId}?org_id=${foreignOrg}`)).status).toBe(404);
    expect((await api.get(`/webhooks/${webhookId}`)).status).toBe(200);
  });

  it('refuses an empty org_id (query, JSON body or form) with 400 on every route, and creates nothing in the caller\'s own account', async () => {
    const own = async () => (await api.get('/users/me/sources')).body.page_info.total_count as number;
    const ownWebhooks = async () => (await api.get('/users/me/webhooks')).body.page_info.total_count as number;
    const [sourcesBefore, webhooksBefore] = [await own(), await ownWebhooks()];
    const expectEmptyOrgId = (label: string, res: { status: number; body: any }, where: 'query' | 'body') => { // eslint-disable-line @typescript-eslint/no-explicit-any
      expect([label, res.status, res.body?.code, res.body?.details]).toEqual([label, 400, 'invalid_request', { in: where, field: 'org_id' }]);
      expectErrorBody(res.body, 'invalid_request');
      expect(res.body.error).toMatch(/^org_id must /);
    };
    const creates: [string, string, unknown][] = [
      ['POST', '/sources', { component_id: componentId }],
      ['POST', '/webhooks', { url: 'https://example.com/empty-org' }],
      ['PUT', `/sources/${sourceId}`, { component_id: componentId, name: 'renamed' }],
    ];
    for (const [method, path, body] of [...routes(), ...creates, ['GET', '/users/me/sources'] as [string, string]]) {
      expectEmptyOrgId(`${method} ${path}?org_id=`, await call(method, `${path}?org_id=`, body), 'query');
    }
    for (const [method, path, body] of creates) {
      expectEmptyOrgId(`${method} ${path} {org_id: ""}`, await call(method, path, { ...(body as object), org_id: '' }), 'body');
    }
    // The body wins over the query string: an empty org_id in the body is not replaced by the query's.
    expectEmptyOrgId('POST /sources?org_id=o_x {org_id: ""}', await api.post(`/sources?org_id=${foreignOrg}`, { component_id: componentId, org_id: '' }), 'body');
    const form = await fetch(`${system.baseUrl}/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.apiKey}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'url=https%3A%2F%2Fexample.com%2Fform&org_id=',
    });
    expectEmptyOrgId('POST /webhooks form org_id=', { status: form.status, body: await form.json() }, 'body');
    const sse = await fetch(`${system.origin}/sse/dc/${sourceId}/emits?org_id=`, { headers: { authorization: `Bearer ${user.apiKey}` } });
    expectEmptyOrgId('GET /sse/dc/{id}/emits?org_id=', { status: sse.status, body: await sse.json() }, 'query');
    expect([await own(), await ownWebhooks()]).toEqual([sourcesBefore, webhooksBefore]);
    expect((await api.get(`/sources/${sourceId}`)).body.data.name).not.toBe('renamed');
  });

  it('validates the body of POST /sources/{id}/run: a JSON object or nothing', async () => {
    for (const body of ['str', 123, [], null, true]) {
      const res = await api.post(`/sources/${sourceId}/run`, body);
      expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), 400]);
      expectErrorBody(res.body, 'invalid_request');
    }
    expect((await api.post(`/sources/${sourceId}/run`, { nope: 1 })).body.error).toBe('unknown field: nope');
    expect((await api.post(`/sources/${sourceId}/run?event=1`)).status).toBe(400);
  });

  it('validates prop options page: a non-negative integer', async () => {
    for (const page of [[[1]], -1, 1.5, 'x', {}]) {
      const res = await api.post(`/components/${componentId}/props/http/options`, { page });
      expect([JSON.stringify(page), res.status]).toEqual([JSON.stringify(page), 400]);
      expect(res.body.details).toMatchObject({ in: 'body', field: 'page' });
    }
    expect((await api.post(`/components/${componentId}/props/http/options?page=-1`)).status).toBe(400);
    expect((await api.post(`/components/${componentId}/props/http/options?page=2`)).status).toBe(200);
  });
});
