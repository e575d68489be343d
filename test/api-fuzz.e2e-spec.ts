import { connect as connectTcp } from 'node:net';
import fc from 'fast-check';
import { client, createUser, TestUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { DocOperation, fillPath, Json, operationsOf } from './support/openapi-requests';
import { startSystem, System } from './support/system';

/**
 * Property: for every route of the document, a malformed request (random path values, unknown or
 * mistyped query parameters, bodies of the wrong JSON type, invalid JSON, odd content types) never
 * answers 5xx, always answers errors as `{ error, code, details? }`, and the apps still answer after.
 */
describe('malformed requests on every route (property-based)', () => {
  let system: System;
  let user: TestUser;
  let ops: DocOperation[];
  /** Ids that exist, so that malformed queries and bodies also reach the handlers behind a found resource. */
  const real: string[] = [];

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
    user = createUser(system);
    ops = operationsOf((await (await fetch(`${system.baseUrl}/openapi.json`)).json()) as Json);
    const api = client(system, user.apiKey);
    const componentId = (await api.post('/components', { component_code: HTTP_SOURCE })).body.data.id as string;
    real.push(componentId, (await api.post('/sources', { component_id: componentId })).body.data.id, (await api.post('/webhooks', { url: 'https://example.com/h' })).body.data.id);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const pathValue = (): fc.Arbitrary<string> => fc.oneof(
    fc.constantFrom(...real),
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 20 }),
    fc.constantFrom('dc_', 'sc_x', 'wh_%00', '..', '%', '\u0000', 'a'.repeat(300), '$errors', 'null'),
  );
  const queryValue = fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('-1', '1e400', '[]', '{}', '%00', '\u0000', 'true', ''), fc.integer().map(String));
  const query = fc.dictionary(fc.oneof(fc.constantFrom('limit', 'after', 'before', 'expand', 'event_name', 'org_id', 'include', 'start_id', 'page', 'active'), fc.string({ minLength: 1, maxLength: 12 })), queryValue, { maxKeys: 3 });
  const body = fc.oneof(
    fc.constant(undefined),
    fc.jsonValue({ maxDepth: 4 }).map((v) => ({ json: v })),
    fc.dictionary(fc.constantFrom('component_id', 'component_code', 'configured_props', 'name', 'url', 'page', 'event', 'active', 'emitter_id', 'listener_id', 'event_name', 'org_id'), fc.jsonValue({ maxDepth: 3 })).map((v) => ({ json: v })),
    fc.string({ maxLength: 60 }).map((raw) => ({ raw, type: 'application/json' })),
    fc.constantFrom(
      { raw: '{"a":' + '['.repeat(5000), type: 'application/json' },
      { raw: '{"name":"\\u0000"}', type: 'application/json' },
      { raw: '<x/>', type: 'application/xml' },
      { raw: 'a=1&b=%00', type: 'application/x-www-form-urlencoded' },
      { raw: '{}', type: 'text/plain' },
    ),
  );

  it('never answers 5xx, always with the error shape, and the apps keep answering', async () => {
    const request = fc.record({ op: fc.integer({ min: 0, max: 1000 }), path: pathValue(), query, body, authed: fc.boolean() });
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const op = ops[r.op % ops.length];
        // A valid request to a live stream of an existing source stays open: streams get random ids only.
        if (Object.values(op.success).includes('sse') && real.includes(r.path)) return;
        const path = fillPath(op.path, Object.fromEntries(op.parameters.filter((p) => p.in === 'path').map((p) => [p.name, r.path])));
        const qs = new URLSearchParams(r.query).toString();
        const b = r.body as { json?: unknown; raw?: string; type?: string } | undefined;
        const res = await fetch(`${system.origin}${path}${qs ? `?${qs}` : ''}`, {
          method: op.method,
          headers: {
            ...(r.authed ? { authorization: `Bearer ${user.apiKey}` } : {}),
            ...(b ? { 'content-type': b.type ?? 'application/json' } : {}),
          },
          body: op.method === 'GET' || !b ? undefined : b.raw ?? JSON.stringify(b.json),
        });
        const text = await res.text();
        seen.add(res.status);
        expect([op.method, op.path, res.status < 500]).toEqual([op.method, op.path, true]);
        if (res.status >= 400) {
          const parsed = JSON.parse(text) as Json;
          expect(parsed).toEqual({ error: expect.any(String), code: expect.any(String), ...(parsed.details !== undefined ? { details: expect.any(Object) } : {}) });
        }
      }),
      { numRuns: 1000, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) },
    );
    expect([...seen].some((s) => s === 400)).toBe(true);
    const health = await fetch(`${system.origin}/healthz`);
    expect(health.status).toBe(200);
    expect((await client(system, user.apiKey).get('/users/me')).status).toBe(200);
  });
});

/** The answers to bytes sent as written, split by their framing; `halfClose` ends the client's side after sending. */
function rawExchange(origin: string, request: string, halfClose = false): Promise<{ status: number; head: string; body: string }[]> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket = connectTcp(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', (e) => (chunks.length ? undefined : reject(e)));
    socket.on('close', () => {
      let rest = Buffer.concat(chunks).toString('utf8');
      const out: { status: number; head: string; body: string }[] = [];
      while (rest.startsWith('HTTP/1.1 ')) {
        const end = rest.indexOf('\r\n\r\n');
        if (end < 0) break;
        const head = rest.slice(0, end);
        rest = rest.slice(end + 4);
        let body = '';
        const length = /\r\ncontent-length: *(\d+)/i.exec(head);
        if (length) {
          body = rest.slice(0, Number(length[1]));
          rest = rest.slice(Number(length[1]));
        } else if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
          for (;;) {
            const nl = rest.indexOf('\r\n');
            const size = parseInt(rest.slice(0, nl), 16);
            rest = rest.slice(nl + 2);
            if (!size) {
              rest = rest.slice(2);
              break;
            }
            body += rest.slice(0, size);
            rest = rest.slice(size + 2);
          }
        }
        out.push({ status: Number(head.slice(9, 12)), head, body });
      }
      resolve(out);
    });
    // A guard, not a measure: an answer that never ends shows as no answer (or a cut one) instead of hanging the test.
    socket.setTimeout(10_000, () => socket.destroy());
    socket.write(request, () => (halfClose ? socket.end() : undefined));
  });
}

/**
 * Headers, query strings and path segments a client chooses, hostile or odd, sent to every declared operation: the
 * answer is a status the operation declares (or the HTTP layer's, docs/api.md), errors in the `{ error, code,
 * details? }` shape, never a 5xx and never the server's internals (a stack, a file, SQL).
 */
describe('hostile client-chosen headers on every declared operation', () => {
  let system: System;
  let user: TestUser;
  let ops: DocOperation[];
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
    user = createUser(system);
    ops = operationsOf((await (await fetch(`${system.baseUrl}/openapi.json`)).json()) as Json);
    const api = client(system, user.apiKey);
    ids.component = (await api.post('/components', { component_code: HTTP_SOURCE })).body.data.id as string;
    ids.source = (await api.post('/sources', { component_id: ids.component })).body.data.id as string;
    ids.webhook = (await api.post('/webhooks', { url: 'https://example.com/h' })).body.data.id as string;
    ids.endpoint = new URL((await api.get(`/sources/${ids.source}`)).body.data.configured_props.http.endpoint_url as string).pathname;
  });
  afterAll(async () => {
    await system?.stop();
  });

  const isSse = (op: DocOperation): boolean => Object.values(op.success).includes('sse');
  /** The operation's path with existing ids (a stream's with ids that do not exist, so that its answer ends). */
  const pathOf = (op: DocOperation, override?: string): string => {
    const sse = isSse(op);
    const id = op.path.startsWith('/v1/webhooks') ? ids.webhook : op.path.includes('/workflows') || op.path.startsWith('/sse/p/') ? 'p_nope' : sse ? 'dc_nope' : ids.source;
    const values: Record<string, string> = { id, keyOrId: ids.component, key: 'schedule-interval', prop: 'http', org_id: 'o_nope', channel: '$errors', app: 'github' };
    const filled = fillPath(op.path, values);
    if (override === undefined) return filled;
    // The first path parameter replaced by `override`, sent as written (already percent-encoded).
    const first = op.parameters.find((p) => p.in === 'path');
    return first ? op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => (name === first.name ? override : encodeURIComponent(values[name] ?? 'x'))) : filled;
  };

  /** `served`: the variant is a request the API serves as the plain one (some operation answers 2xx). */
  type Variant = { name: string; request: (op: DocOperation, host: string, key: string) => string; halfClose?: boolean; served?: boolean; skip?: (op: DocOperation) => boolean; also?: number[]; expect?: (op: DocOperation, status: number, body: Json, head: string) => void };
  const line = (op: DocOperation, path: string, host: string, headers: string[], body = ''): string => `${op.method} ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n${body}`;
  const json = '{}';
  const withBody = (op: DocOperation): string[] => (op.method === 'GET' ? [] : ['Content-Type: application/json', `Content-Length: ${json.length}`]);
  const bodyOf = (op: DocOperation): string => (op.method === 'GET' ? '' : json);
  const authed = (key: string): string => `Authorization: Bearer ${key}`;
  const notUnauthorized = (op: DocOperation, status: number): void => expect([op.method, op.path, status === 401]).toEqual([op.method, op.path, false]);
  const variants: Variant[] = [
    {
      name: 'two Content-Type headers',
      request: (op, host, key) => line(op, pathOf(op), host, [authed(key), 'Content-Type: application/json', 'Content-Type: text/plain', `Content-Length: ${json.length}`], json),
      expect: (op, status, body) => expect([status, body.details]).toEqual([400, { header: 'content-type' }]),
    },
    { name: 'a Content-Length shorter than the body', request: (op, host, key) => line(op, pathOf(op), host, [authed(key), 'Content-Type: application/json', 'Content-Length: 1'], '{"a":1}') },
    { name: 'a Content-Length longer than the body, the client then done', halfClose: true, also: [408], request: (op, host, key) => line(op, pathOf(op), host, [authed(key), 'Content-Type: application/json', 'Content-Length: 50'], json) },
    { name: 'a Content-Length that is not a number', request: (op, host, key) => line(op, pathOf(op), host, [authed(key), 'Content-Type: application/json', 'Content-Length: 2x'], json), expect: (_op, status) => expect(status).toBe(400) },
    { name: 'two different Content-Lengths', request: (op, host, key) => line(op, pathOf(op), host, [authed(key), 'Content-Type: application/json', 'Content-Length: 2', 'Content-Length: 3'], json + ' '), expect: (_op, status) => expect(status).toBe(400) },
    {
      name: 'Transfer-Encoding: chunked with a JSON body',
      request: (op, host, key) => line(op, pathOf(op), host, [authed(key), 'Content-Type: application/json', 'Transfer-Encoding: chunked'], op.method === 'GET' ? '0\r\n\r\n' : `14\r\n{"not_a_field_x":1}\r\n0\r\n\r\n`.replace('14', '13')),
      // The body is read and checked: the field is refused as in a body sent with its length.
      expect: (op, status, body) => (op.method === 'GET' || status === 404 || !op.path.startsWith('/v1/') ? undefined : expect([op.method, op.path, status, (body.details as Json | undefined)?.fields]).toEqual([op.method, op.path, 400, ['not_a_field_x']])),
    },
    { name: 'Transfer-Encoding: chunked and a Content-Length', request: (op, host, key) => line(op, pathOf(op), host, [authed(key), 'Content-Type: application/json', 'Content-Length: 2', 'Transfer-Encoding: chunked'], '2\r\n{}\r\n0\r\n\r\n'), expect: (_op, status) => expect(status).toBe(400) },
    {
      name: 'Accept: text/event-stream', served: true,
      skip: isSse,
      request: (op, host, key) => line(op, pathOf(op), host, [authed(key), 'Accept: text/event-stream', ...withBody(op)], bodyOf(op)),
      expect: (op, status, _body, head) => (status < 300 && status !== 204 ? expect([op.path, /\r\ncontent-type: text\/event-stream/i.test(head)]).toEqual([op.path, false]) : undefined),
    },
    { name: 'a lower-case bearer scheme', served: true, request: (op, host, key) => line(op, pathOf(op), host, [`authorization: bearer ${key}`, ...withBody(op)], bodyOf(op)), expect: notUnauthorized },
    { name: 'extra spaces around the key', served: true, request: (op, host, key) => line(op, pathOf(op), host, [`Authorization:   Bearer    ${key}   `, ...withBody(op)], bodyOf(op)), expect: notUnauthorized },
    {
      name: 'a Basic Authorization',
      request: (op, host) => line(op, pathOf(op), host, ['Authorization: Basic dXNlcjpwYXNz', ...withBody(op)], bodyOf(op)),
      expect: (op, status) => (op.public ? undefined : expect([op.path, status]).toEqual([op.path, 401])),
    },
    {
      name: 'two Authorization headers',
      request: (op, host, key) => line(op, pathOf(op), host, [authed(key), authed(key), ...withBody(op)], bodyOf(op)),
      expect: (op, status, body) => expect([op.path, status, body.details]).toEqual([op.path, 400, { header: 'authorization' }]),
    },
    { name: 'a scheme without a key', request: (op, host) => line(op, pathOf(op), host, ['Authorization: Bearer', ...withBody(op)], bodyOf(op)), expect: (op, status) => (op.public ? undefined : expect([op.path, status]).toEqual([op.path, 401])) },
    { name: 'If-None-Match: *', served: true, request: (op, host, key) => line(op, pathOf(op), host, [authed(key), 'If-None-Match: *', ...withBody(op)], bodyOf(op)), expect: notUnauthorized },
    { name: 'If-None-Match with an etag', served: true, request: (op, host, key) => line(op, pathOf(op), host, [authed(key), 'If-None-Match: "abc", W/"def"', ...withBody(op)], bodyOf(op)) },
    { name: 'an 8 KB Cookie', served: true, request: (op, host, key) => line(op, pathOf(op), host, [authed(key), `Cookie: ${'a=b; '.repeat(1600)}c=d`, ...withBody(op)], bodyOf(op)), expect: notUnauthorized },
    {
      name: 'a 40 KB Cookie',
      also: [431],
      request: (op, host, key) => line(op, pathOf(op), host, [authed(key), `Cookie: ${'x'.repeat(40_000)}`, ...withBody(op)], bodyOf(op)),
      expect: (op, status, body) => expect([op.path, status, body.code]).toEqual([op.path, 431, 'header_too_large']),
    },
    ...['', 'application/json;', 'application/json; charset=', 'application/json; charset="utf-8', '*/*', 'application/json; charset=utf-8; charset=latin1', 'application/json, text/plain', 'text/plain; charset=utf-16le'].map(
      (type): Variant => ({ name: `Content-Type: ${type || '(empty)'}`, request: (op, host, key) => line(op, pathOf(op), host, [authed(key), `Content-Type: ${type}`, `Content-Length: ${json.length}`], json), also: [415] }),
    ),
    { name: 'a key with bytes that are not ASCII', request: (op, host, key) => line(op, pathOf(op), host, [`Authorization: Bearer ${key}\u00e9\u00ff`, ...withBody(op)], bodyOf(op)), expect: (op, status) => (op.public ? undefined : expect([op.path, status]).toEqual([op.path, 401])) },
    { name: 'a key of 12 KB', request: (op, host) => line(op, pathOf(op), host, [`Authorization: Bearer ${'k'.repeat(12_000)}`, ...withBody(op)], bodyOf(op)), expect: (op, status) => (op.public ? undefined : expect([op.path, status]).toEqual([op.path, 401])) },
    { name: 'X-Forwarded-For that names no address', served: true, request: (op, host, key) => line(op, pathOf(op), host, [authed(key), "X-Forwarded-For: not-an-ip, ' or 1=1 --, ::ffff:999.1.1.1", ...withBody(op)], bodyOf(op)), expect: notUnauthorized },
    { name: 'Origin: null and a Range', served: true, request: (op, host, key) => line(op, pathOf(op), host, [authed(key), 'Origin: null', 'Range: bytes=0-1', 'X-HTTP-Method-Override: DELETE', ...withBody(op)], bodyOf(op)), expect: notUnauthorized },
    { name: 'a repeated query parameter', request: (op, host, key) => line(op, `${pathOf(op)}?limit=1&limit=2`, host, [authed(key), ...withBody(op)], bodyOf(op)), expect: (op, status) => expect([op.path, status]).toEqual([op.path, isSse(op) || op.path.startsWith('/v1/') ? 400 : status]) },
    { name: 'a query parameter written as an array', request: (op, host, key) => line(op, `${pathOf(op)}?limit[]=1`, host, [authed(key), ...withBody(op)], bodyOf(op)), expect: (op, status) => expect([op.path, status]).toEqual([op.path, isSse(op) || op.path.startsWith('/v1/') ? 400 : status]) },
    { name: 'an object in the query', request: (op, host, key) => line(op, `${pathOf(op)}?limit[a]=1&org_id[x]=1`, host, [authed(key), ...withBody(op)], bodyOf(op)) },
    ...['%2e%2e%2f', '..', '%2e%2e', 'dc_%00', '%2F', 'dc_%2Fx', '%F0%9F%98%80', 'dc_%C0%AE', 'dc_%ff', '%20', 'dc_x%3Bdrop', '*'].map(
      (segment): Variant => ({
        name: `the path segment ${segment}`,
        skip: (op) => !op.parameters.some((p) => p.in === 'path'),
        request: (op, host, key) => line(op, pathOf(op, segment), host, [authed(key), ...withBody(op)], bodyOf(op)),
        expect: (op, status) => expect([op.method, op.path, segment, [400, 404].includes(status)]).toEqual([op.method, op.path, segment, true]),
      }),
    ),
  ];

  /** The HTTP interface of a source (`/e/<key>/…`), which takes any method, headers and body: what it answers (docs/operations.md). */
  const endpointOps = (): DocOperation[] =>
    ['POST', 'GET', 'PUT', 'DELETE'].map((method) => ({ method, path: `${ids.endpoint}/x`, operationId: `endpoint${method}`, extension: true, public: true, parameters: [], success: { 200: null }, statuses: [200, 400, 404, 408, 413, 415, 429, 503] }));

  it.each(variants.filter((v) => !v.name.startsWith('the path segment')).map((v) => [v.name, v] as const))('%s at the HTTP endpoint of a source: a documented status, in the error shape, nothing internal', async (_name, variant) => {
    const host = new URL(system.origin).host;
    const failures: string[] = [];
    for (const op of endpointOps()) {
      const [answer] = await rawExchange(system.origin, variant.request(op, host, user.apiKey), variant.halfClose);
      if (!answer) {
        failures.push(`${op.method}: no answer`);
        continue;
      }
      const { status, body } = answer;
      if (status < 500 && [...op.statuses, ...(variant.also ?? [])].includes(status) && !/node_modules|\.[jt]s:\d+|\n\s+at |ECONN|TypeError|ReferenceError|Cannot read/i.test(body)) {
        if (status < 400) continue;
        const parsed = JSON.parse(body) as Json;
        if (typeof parsed.error === 'string' && typeof parsed.code === 'string' && Object.keys(parsed).every((k) => ['error', 'code', 'details'].includes(k))) continue;
      }
      failures.push(`${op.method}: ${status} ${body.slice(0, 300)}`);
    }
    expect(failures).toEqual([]);
  });

  it.each(variants.map((v) => [v.name, v] as const))('%s: a declared status, in the error shape, nothing internal', async (_name, variant) => {
    const host = new URL(system.origin).host;
    // Deletions last, the source itself at the very end.
    const rank = (op: DocOperation): number => (op.method !== 'DELETE' ? 0 : op.path === '/v1/sources/{id}' ? 2 : 1);
    const failures: string[] = [];
    const statuses = new Set<number>();
    let sent = 0;
    for (const op of [...ops].sort((a, b) => rank(a) - rank(b))) {
      if (variant.skip?.(op)) continue;
      sent++;
      const answers = await rawExchange(system.origin, variant.request(op, host, user.apiKey), variant.halfClose);
      const where = `${op.method} ${op.path}`;
      if (answers.length === 0) {
        failures.push(`${where}: no answer`);
        continue;
      }
      const [{ status, head, body }] = answers;
      statuses.add(status);
      try {
        expect(status).toBeLessThan(500);
        expect([...op.statuses, ...(variant.also ?? [])]).toContain(status);
        if (status >= 400) {
          const parsed = JSON.parse(body) as Json;
          expect(parsed).toEqual({ error: expect.any(String), code: expect.any(String), ...(parsed.details !== undefined ? { details: expect.any(Object) } : {}) });
        }
        expect(body).not.toMatch(/node_modules|\.[jt]s:\d+|\n\s+at |\bselect\b.*\bfrom\b|ECONN|TypeError|ReferenceError|Cannot read/i);
        variant.expect?.(op, status, status >= 400 ? (JSON.parse(body) as Json) : {}, head);
      } catch (e) {
        failures.push(`${where}: ${status} ${body.slice(0, 300)}\n${(e as Error).message.split('\n').slice(0, 6).join(' ')}`);
      }
    }
    expect(failures).toEqual([]);
    expect(sent).toBeGreaterThan(variant.skip ? 10 : 40);
    if (variant.served) expect([...statuses].some((st) => st >= 200 && st < 300)).toBe(true);
    // The api still answers.
    expect((await client(system, user.apiKey).get('/users/me')).status).toBe(200);
  });
});
