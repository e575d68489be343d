import { connect } from 'node:net';
import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * RFC 9112 §3.2.2: a server accepts a request target in absolute form (`GET http://host/e/<key>/x`, what a client
 * sends to a forward proxy) as the origin form it names. The router found the endpoint, but the event's `path` was
 * the whole absolute URL, its `url` that URL glued after the endpoint's, and the source's cookies were not kept
 * under its own path on the shared origin.
 */
const ECHO = `module.exports = { name: "Echo", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) { this.http.respond({ status: 200, headers: { "content-type": "application/json", "set-cookie": "sid=1" }, body: JSON.stringify({ path: event.path, url: event.url, query: event.query }) }); } };`;

/** One request written as is on its own connection; the answer's head and body as text. */
function send(port: number, text: string): Promise<{ head: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let out = '';
    socket.on('data', (d) => (out += d.toString('utf8')));
    socket.on('error', reject);
    socket.on('close', () => {
      const at = out.indexOf('\r\n\r\n');
      resolve({ head: out.slice(0, at), body: out.slice(at + 4) });
    });
    socket.write(text);
  });
}

describe('a request target in absolute form at an HTTP endpoint', () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0' }, { apps: ['api', 'runner'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('reaches the source as the origin form it names: path, url and cookie path as for /e/<key>/…', async () => {
    const user = createUser(system);
    const res = await client(system, user.apiKey).post('/sources', { component_code: ECHO });
    expect(res.status).toBe(200);
    const url = res.body.data.configured_props.http.endpoint_url as string;
    const { port, pathname } = new URL(url);
    await eventually(async () => (await fetch(url)).status === 200, { what: 'the endpoint', timeoutMs: 30_000 });
    const answer = await send(Number(port), `GET http://127.0.0.1:${port}${pathname}/abs?x=1 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
    expect(answer.head).toMatch(/^HTTP\/1\.1 200 /);
    expect(JSON.parse(answer.body)).toEqual({ path: '/abs', url: `${url}/abs?x=1`, query: { x: '1' } });
    expect(answer.head).toMatch(new RegExp(`^set-cookie: sid=1; Path=${pathname}$`, 'im'));
  });

  it('a fragment in the target is refused, as on the API: it was read as the query string, unlike path and url', async () => {
    const user = createUser(system);
    const res = await client(system, user.apiKey).post('/sources', { component_code: ECHO });
    const url = res.body.data.configured_props.http.endpoint_url as string;
    const { port, pathname } = new URL(url);
    await eventually(async () => (await fetch(url)).status === 200, { what: 'the endpoint', timeoutMs: 30_000 });
    for (const method of ['GET', 'POST']) {
      const answer = await send(Number(port), `${method} ${pathname}/x#frag?y=1 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      expect([method, answer.head.split('\r\n')[0], JSON.parse(answer.body)]).toEqual([
        method,
        'HTTP/1.1 400 Bad Request',
        { error: 'the request target contains a fragment (#…), which is never sent to a server: leave it out', code: 'invalid_request', details: { reason: 'fragment' } },
      ]);
    }
  });

  it('the asterisk form: OPTIONS * is answered 204 (a ping of the server), any other method with it a 400', async () => {
    const port = Number(system.env.PORT);
    const ping = await send(port, 'OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    expect([ping.head.split('\r\n')[0], ping.body]).toEqual(['HTTP/1.1 204 No Content', '']);
    expect(ping.head).toMatch(/^cache-control: no-store$/im);
    for (const method of ['GET', 'POST', 'DELETE']) {
      const answer = await send(port, `${method} * HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      expect([method, answer.head.split('\r\n')[0], JSON.parse(answer.body)]).toEqual([
        method,
        'HTTP/1.1 400 Bad Request',
        { error: `the request target * is for OPTIONS only: send ${method} to a path`, code: 'invalid_request', details: { reason: 'asterisk_form' } },
      ]);
    }
  });
});
