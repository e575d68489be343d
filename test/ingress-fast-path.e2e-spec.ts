import { connect, NatsConnection } from 'nats';
import { natsAdmin } from './support/env';
import { decodeJson, HTTP_BODY_MAX_JSON_DEPTH, InvocationMessage, Names, partitionOf } from '@app/contracts';
import { client, createUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { scrapeMetrics } from './support/metrics';
import { rawRequest } from './support/raw-http';
import { startSystem, System } from './support/system';

/**
 * The ingress's fast path (INGRESS_FAST_PATH, on by default) against Fastify's route (off): the same bytes sent to
 * an api of each kind get the same answer and store the same invocation, request by request.
 */
interface Side {
  system: System;
  sourceId: string;
  endpointUrl: string;
  path: string;
}

// The requests come from 127.0.0.1: trusted as a proxy, its X-Forwarded-For is read (by each way by the same rule).
const ENV = { HTTP_MAX_BODY_BYTES: '2048', HTTP_RATE_PER_SEC: '0', TRUST_PROXY: '127.0.0.1' };

describe('HTTP endpoints: the fast path answers and stores what the framework route does', () => {
  let fast: Side;
  let routed: Side;
  let nc: NatsConnection;

  const side = async (env: Record<string, string>): Promise<Side> => {
    const system = await startSystem({ ...ENV, ...env }, { apps: ['api'] });
    const res = await client(system, createUser(system).apiKey).post('/sources', { component_code: HTTP_SOURCE });
    expect(res.status).toBe(200);
    const endpointUrl: string = res.body.data.configured_props.http.endpoint_url;
    return { system, sourceId: res.body.data.id, endpointUrl, path: new URL(endpointUrl).pathname };
  };

  beforeAll(async () => {
    [fast, routed] = await Promise.all([side({}), side({ INGRESS_FAST_PATH: 'false' })]);
    nc = await connect(natsAdmin());
  });
  afterAll(async () => {
    await nc?.close();
    await Promise.all([fast?.system.stop(), routed?.system.stop()]);
  });

  const lastInvocation = async (s: Side): Promise<InvocationMessage> => {
    const names = new Names(s.system.natsPrefix);
    const jsm = await nc.jetstreamManager();
    const m = await jsm.streams.getMessage(names.invocationsStream, { last_by_subj: names.invocation(partitionOf(s.sourceId, Number(s.system.env.PARTITIONS)), s.sourceId) });
    const stored = decodeJson<InvocationMessage | InvocationMessage[]>(m.data);
    return Array.isArray(stored) ? stored[stored.length - 1] : stored;
  };

  /** Sends `head` (its first line's `PATH` and the Host header filled in per side) and `body`; what the client and the source see. */
  const send = async (s: Side, head: string, body = ''): Promise<{ status: number; contentType?: string; retryAfter?: string; headers: Record<string, string>; body: unknown; event?: unknown }> => {
    const { host } = new URL(s.system.origin);
    const lines = head.replace('PATH', s.path).split('\n');
    const request = [lines[0], `Host: ${host}`, ...lines.slice(1)].join('\r\n') + '\r\n\r\n' + body;
    const before = await lastInvocation(s).catch(() => undefined);
    const res = await rawRequest(s.system.origin, request);
    // Every header of the answer but its date, names in lower case.
    const headers = Object.fromEntries(
      res.headers
        .split('\r\n')
        .slice(1)
        .map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()])
        .filter(([name]) => name !== 'date'),
    ) as Record<string, string>;
    const out = { status: res.status, contentType: headers['content-type'], retryAfter: headers['retry-after'], headers, body: JSON.parse(res.body) as unknown };
    if (res.status !== 200) return out;
    const inv = await lastInvocation(s);
    expect(inv.invocationId).not.toBe(before?.invocationId);
    const event = JSON.parse(JSON.stringify(inv.event).split(s.endpointUrl).join('<endpoint>')) as { headers: Record<string, unknown> };
    delete event.headers.host;
    return { ...out, event };
  };

  const pick = ({ status, body }: { status: number; body: unknown }): { status: number; body: unknown } => ({ status, body });

  const served = async (s: Side): Promise<Record<string, number>> => {
    const m = await scrapeMetrics(`${s.system.origin}/metrics`);
    return { fast: m['api_ingress_requests_total{path="fast"}'], route: m['api_ingress_requests_total{path="route"}'] };
  };

  const json = (body: string, extra = ''): [string, string] => [`POST PATH/hooks/a?x=1&y=two&x=3&flag HTTP/1.1\nContent-Type: application/json\nX-Custom: v${extra}\nContent-Length: ${Buffer.byteLength(body)}`, body];
  const deep = '['.repeat(HTTP_BODY_MAX_JSON_DEPTH + 1) + ']'.repeat(HTTP_BODY_MAX_JSON_DEPTH + 1);
  const cases: [string, [string, string]][] = [
    ['JSON with a query, a path and a header', json('{"hello":"wörld","n":[1,2,{"a":null}]}')],
    ['the client address from X-Forwarded-For (its last address: 10.0.0.1 is not trusted)', json('{}', '\nX-Forwarded-For: 203.0.113.7, 10.0.0.1')],
    ['JSON that does not parse', json('{"a":')],
    ['JSON nested too deeply (400)', json(deep)],
    ['a form, PUT', [`PUT PATH HTTP/1.1\nContent-Type: application/x-www-form-urlencoded\nContent-Length: 12`, 'a=1&b=%C3%A9']],
    ['text, PATCH, a trailing slash', [`PATCH PATH/ HTTP/1.1\nContent-Type: text/plain; charset=utf-8\nContent-Length: 9`, 'just text']],
    ['no body and no content type', [`POST PATH?only=query HTTP/1.1\nContent-Length: 0`, '']],
    // The HTTP interface relays a query string as sent, escapes that do not decode included (the API refuses them).
    ['a query with broken escapes', [`POST PATH?a=%zz&b=%ff&c=%C3%A9+d&e=%2 HTTP/1.1\nContent-Length: 0`, '']],
    ['a binary type', [`POST PATH/bin HTTP/1.1\nContent-Type: application/octet-stream\nContent-Length: 4`, 'abcd']],
    // Not the fast path's: both go through the route, and must still agree.
    ['a chunked body', [`POST PATH HTTP/1.1\nContent-Type: application/json\nTransfer-Encoding: chunked`, '7\r\n{"a":1}\r\n0\r\n\r\n']],
    ['a GET', [`GET PATH/x?a=1 HTTP/1.1\nAccept: */*`, '']],
    ['a body over HTTP_MAX_BODY_BYTES (413)', [`POST PATH HTTP/1.1\nContent-Type: text/plain\nContent-Length: 3000`, 'x'.repeat(3000)]],
    ['an escaped path', [`POST PATH/a%20b HTTP/1.1\nContent-Type: text/plain\nContent-Length: 1`, 'x']],
  ];

  it('gives every request the same answer and stores the same event either way, and serves the common ones without the route', async () => {
    // The first request of an endpoint loads it into the lookup's cache (the route serves it): from then on it is known.
    for (const s of [fast, routed]) expect((await send(s, `POST PATH HTTP/1.1\nContent-Length: 0`)).status).toBe(200);
    const before = await served(fast);
    for (const [what, [head, body]] of cases) {
      const [a, b] = [await send(fast, head, body), await send(routed, head, body)];
      expect({ what, ...a }).toEqual({ what, ...b });
    }
    expect(await send(fast, json('{}')[0], '{}')).toMatchObject({ status: 200, contentType: 'application/json; charset=utf-8', body: { success: true } });
    const after = await served(fast);
    // The nine POST, PUT and PATCH cases with a Content-Length body within the limit (and the last request) took the fast
    // path; the chunked body, the GET and the escaped path reached the route (the 413 is Fastify's body parser's, before it).
    expect(after.fast - before.fast).toBe(10);
    expect(after.route - before.route).toBe(3);
    expect((await served(routed)).fast).toBe(0);
  });

  it('refuses two Content-Type or two Authorization headers before storing anything, either way (the source saw the first one)', async () => {
    const refused = (header: string, name: string) => ({ status: 400, body: { error: `send one ${name} header, not several`, code: 'invalid_request', details: { header } } });
    const cases: [string, [string, string], unknown][] = [
      ['two Content-Types, a POST', [`POST PATH HTTP/1.1\nContent-Type: application/json\nContent-Type: text/plain\nContent-Length: 7`, '{"a":1}'], refused('content-type', 'Content-Type')],
      ['two Content-Types in other cases, a PUT', [`PUT PATH/x HTTP/1.1\ncontent-type: text/plain\nCONTENT-TYPE: text/plain\nContent-Length: 1`, 'x'], refused('content-type', 'Content-Type')],
      ['two Content-Types, a chunked body', [`POST PATH HTTP/1.1\nContent-Type: application/json\nContent-Type: application/x-www-form-urlencoded\nTransfer-Encoding: chunked`, '7\r\n{"a":1}\r\n0\r\n\r\n'], refused('content-type', 'Content-Type')],
      ['two Authorizations, a POST', [`POST PATH HTTP/1.1\nAuthorization: Bearer proxy-checked\nAuthorization: Bearer other\nContent-Type: application/json\nContent-Length: 2`, '{}'], refused('authorization', 'Authorization')],
      ['two Authorizations, a GET', [`GET PATH/x HTTP/1.1\nAuthorization: Basic YTpi\nauthorization: Basic Yzpk`, ''], refused('authorization', 'Authorization')],
    ];
    for (const s of [fast, routed]) {
      // Known to the lookup's cache: a plain POST would take the fast path.
      expect((await send(s, `POST PATH HTTP/1.1\nContent-Length: 0`)).status).toBe(200);
      const before = (await lastInvocation(s)).invocationId;
      const answers = [];
      for (const [what, [head, body]] of cases) answers.push({ what, ...pick(await send(s, head, body)) });
      expect(answers).toEqual(cases.map(([what, , expected]) => ({ what, ...(expected as object) })));
      expect((await lastInvocation(s)).invocationId).toBe(before);
      // One of each is served as before.
      expect((await send(s, `POST PATH HTTP/1.1\nAuthorization: Bearer one\nContent-Type: application/json\nContent-Length: 2`, '{}')).status).toBe(200);
    }
  });

  it('decodes a body in the charset its Content-Type declares, and answers 415 for a charset it does not know, either way', async () => {
    /** Sends `bytes` with `contentType`; the answer, and the body of the event stored (when it was). */
    const sendBytes = async (s: Side, contentType: string, bytes: Buffer): Promise<{ status: number; body: unknown; event?: { bodyRaw: unknown; body: unknown } }> => {
      const before = await lastInvocation(s).catch(() => undefined);
      const res = await fetch(s.endpointUrl, { method: 'POST', headers: { 'content-type': contentType }, body: new Uint8Array(bytes) });
      const out = { status: res.status, body: (await res.json()) as unknown };
      if (res.status !== 200) return out;
      const inv = await lastInvocation(s);
      expect(inv.invocationId).not.toBe(before?.invocationId);
      const { bodyRaw, body } = inv.event as { bodyRaw: unknown; body: unknown };
      return { ...out, event: { bodyRaw, body } };
    };
    const stored = (bodyRaw: string, body: unknown) => ({ status: 200, body: { success: true }, event: { bodyRaw, body } });
    const refused = (charset: string) => ({
      status: 415,
      body: { error: `the request body's charset ${charset} is not supported: send it as UTF-8 (or in a charset such as iso-8859-1, windows-1252 or utf-16le)`, code: 'unsupported_media_type', details: { header: 'content-type', charset } },
    });
    const cases: [string, string, Buffer, unknown][] = [
      ['latin1 text', 'text/plain; charset=iso-8859-1', Buffer.from('caf\xe9 \xa3', 'latin1'), stored('café £', 'café £')],
      ['a label in another case', 'text/plain; Charset=Latin1', Buffer.from('\xe9', 'latin1'), stored('é', 'é')],
      ['windows-1252 text', 'text/plain;charset=windows-1252', Buffer.from([0x80, 0x20, 0x93, 0x61, 0x94]), stored('€ “a”', '€ “a”')],
      ['a quoted charset, UTF-16LE JSON', 'application/json; charset="utf-16le"', Buffer.from('{"a":"é☃"}', 'utf16le'), stored('{"a":"é☃"}', { a: 'é☃' })],
      // A form's escapes stand for bytes in its charset too; one that does not decode stays as written.
      ['a windows-1252 form', 'application/x-www-form-urlencoded; charset=windows-1252', Buffer.concat([Buffer.from('a=caf%E9&b=%80+x&c='), Buffer.from([0xe9]), Buffer.from('&d=%zz&a=%41')]), stored('a=caf%E9&b=%80+x&c=é&d=%zz&a=%41', { a: ['café', 'A'], b: '€ x', c: 'é', d: '%zz' })],
      ['UTF-8, as before', 'text/plain; charset=utf-8', Buffer.from('é☃'), stored('é☃', 'é☃')],
      ['no charset: UTF-8, as before', 'text/plain', Buffer.from('é☃'), stored('é☃', 'é☃')],
      ['an unknown charset', 'text/plain; charset=klingon', Buffer.from('x'), refused('klingon')],
      ['a charset Node does not decode', 'text/plain; charset=binary', Buffer.from('x'), refused('binary')],
      ['an empty charset', 'application/json; charset=', Buffer.from('{}'), refused('')],
      // No body, no characters to decode: stored as an empty body whatever its charset.
      ['an empty body with an unknown charset', 'text/plain; charset=klingon', Buffer.alloc(0), stored('', '')],
    ];
    // The first request of an endpoint loads it into the lookup's cache (the route serves it): from then on it is known.
    for (const s of [fast, routed]) expect((await sendBytes(s, 'text/plain', Buffer.from('x'))).status).toBe(200);
    const before = await served(fast);
    for (const [what, contentType, bytes, expected] of cases) {
      const [a, b] = [await sendBytes(fast, contentType, bytes), await sendBytes(routed, contentType, bytes)];
      expect({ what, ...a }).toEqual({ what, ...(expected as object) });
      expect({ what, ...b }).toEqual({ what, ...(expected as object) });
    }
    expect((await served(fast)).fast - before.fast).toBe(cases.length);
  });

  it('answers 429 with Retry-After once the backlog bound is reached, as the route does', async () => {
    const bound = async (env: Record<string, string>): Promise<Side> => side({ ...env, INGEST_MAX_PENDING_PER_SOURCE: '1', INGEST_BACKLOG_POLL_MS: '100' });
    const [f, r] = await Promise.all([bound({}), bound({ INGRESS_FAST_PATH: 'false' })]);
    try {
      for (const s of [f, r]) {
        // No runner: the requests stay in INVOCATIONS, and once the api has read that backlog it refuses the next.
        let last: Awaited<ReturnType<typeof send>> | undefined;
        for (let i = 0; i < 100 && last?.status !== 429; i++) {
          last = await send(s, `POST PATH HTTP/1.1\nContent-Type: application/json\nContent-Length: 2`, '{}');
          if (last.status !== 429) await new Promise((res) => setTimeout(res, 50));
        }
        expect(last).toMatchObject({ status: 429, contentType: 'application/json; charset=utf-8', retryAfter: expect.stringMatching(/^\d+$/), body: { code: 'backlog_full', error: expect.any(String) } });
      }
      expect((await served(f)).fast).toBeGreaterThan(0);
    } finally {
      await Promise.all([f.system.stop(), r.system.stop()]);
    }
  });
});
