import { connect, Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { client, createUser } from './support/accounts';
import { rawRequest } from './support/raw-http';
import { eventually, startSystem, System } from './support/system';

/**
 * A `/v1` body was read whole (up to twice COMPONENT_MAX_BYTES) before its API key was checked, and each made-up token
 * waits in a lane of its own: 100 connections of one client without any account, each holding 10 MB of a body under a
 * token of its own, held 1 GB of the api until their request timeout; a path no route has (any key) read its body too.
 */
describe('request bodies under keys that are none, or to routes that are none', () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  const answerOf = (raw: string): { status: number; headers: string; body: unknown } => {
    const [head, body] = [raw.slice(0, raw.indexOf('\r\n\r\n')), raw.slice(raw.indexOf('\r\n\r\n') + 4)];
    return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body: JSON.parse(body) };
  };

  it('answers 401 (or 404) before reading the body, so held bodies cost the api nothing; a real key still sends its body', async () => {
    const pid = system.procs.get('api')!.pid!;
    const rssMb = (): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
    const before = rssMb();
    const port = Number(new URL(system.origin).port);
    const size = 10 * 1024 * 1024;
    // Each declares 10 MiB and sends 1 MiB of it, then holds: a body read whole before its key were never answered.
    const body = Buffer.alloc(1024 * 1024, 'a');
    const answers: string[] = [];
    const sockets: Socket[] = [];
    const errors: string[] = [];
    for (let i = 0; i < 100; i++) {
      const s = connect(port, '127.0.0.1');
      s.on('error', (e: NodeJS.ErrnoException) => errors.push(`${i}: ${e.code ?? e.message}`));
      let raw = '';
      s.on('data', (d: Buffer) => {
        raw += d.toString();
        if (raw.includes('\r\n\r\n') && raw.endsWith('}')) answers.push(raw);
      });
      // A made-up token each, then none at all, then a malformed header; every other one to a path no route has.
      const auth = i < 90 ? `Authorization: Bearer pd_madeup${i}\r\n` : i < 95 ? '' : 'Authorization: Basic eDp5\r\n';
      s.write(`POST ${i % 2 ? '/v1/sources' : '/v1/nothing/here'} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`);
      s.write(body);
      sockets.push(s);
    }
    await eventually(async () => answers.length === 100, { what: 'an answer to every request', timeoutMs: 60_000 }).catch((e: Error) => {
      throw new Error(`${e.message} (${answers.length} answered; socket errors: ${errors.join(', ') || 'none'})`);
    });
    // The api closes in stages (a lingering close): a client still writing its body is not reset, so no write of
    // theirs failed (an EPIPE once lost one of the 100 answers, received but not yet read).
    expect(errors).toEqual([]);
    expect(rssMb() - before).toBeLessThan(200);
    const parsed = answers.map(answerOf);
    expect(parsed.every((a) => a.headers.includes('connection: close'))).toBe(true);
    const unauthorized = parsed.filter((a) => a.status === 401);
    expect(unauthorized).toHaveLength(50);
    expect(unauthorized.every((a) => a.headers.includes('www-authenticate: bearer') && (a.body as { code: string }).code === 'unauthorized')).toBe(true);
    expect(parsed.filter((a) => a.status === 404).map((a) => a.body)).toEqual(Array(50).fill({ error: 'no such route: POST /v1/nothing/here', code: 'not_found' }));
    sockets.forEach((s) => s.destroy());
    // A known key's body is read and acted on, also a large one.
    const api = client(system, createUser(system).apiKey);
    const created = await api.post('/sources', { component_code: `// ${'x'.repeat(1024 * 1024)}\nmodule.exports = { name: "Big", version: "1", props: { http: "$.interface.http" }, async run() {} };` });
    expect(created.status).toBe(200);
  }, 120_000);

  it('closes in stages after such an answer: the client reads it and may go on sending its body, which is read and dropped, not reset', async () => {
    const port = Number(new URL(system.origin).port);
    // Half-open allowed: the client goes on sending after the api's FIN, as a client sending its body does.
    const s = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const errors: string[] = [];
    s.on('error', (e: NodeJS.ErrnoException) => errors.push(e.code ?? e.message));
    let raw = '';
    s.on('data', (d: Buffer) => (raw += d.toString()));
    s.write(`POST /v1/sources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer pd_madeup_linger\r\nContent-Type: application/json\r\nContent-Length: ${10 * 1024 * 1024}\r\n\r\n`);
    await eventually(async () => raw.endsWith('}'), { what: 'the 401' });
    expect(raw).toMatch(/^HTTP\/1\.1 401 /);
    // Closed at once, the api's socket answered these writes with a reset (EPIPE, ECONNRESET).
    for (let i = 0; i < 4; i++) await new Promise<void>((resolve) => s.write(Buffer.alloc(1024 * 1024, 'a'), () => resolve()));
    await new Promise((r) => setTimeout(r, 300));
    expect(errors).toEqual([]);
    s.destroy();
  });

  it('answers a route that needs no key as without a body (the body read and dropped, the connection kept), and one that needs a key 401 before it', async () => {
    const body = JSON.stringify({ padding: 'x'.repeat(256 * 1024) });
    const head = (method: string, path: string, extra = ''): string => `${method} ${path} HTTP/1.1\r\nHost: x\r\n${extra}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n`;
    // Without a key and with a made-up one, then a second request on the same connection: the body was read past.
    for (const auth of ['', 'Authorization: Bearer pd_madeup\r\n']) {
      const res = await rawRequest(system.origin, `${head('GET', '/v1/openapi.json', auth)}Connection: keep-alive\r\n\r\n${body}GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      const text = `${res.headers}\r\n\r\n${res.body}`;
      expect([auth, text.match(/HTTP\/1\.1 \d{3} /g)]).toEqual([auth, ['HTTP/1.1 200 ', 'HTTP/1.1 200 ']]);
      expect(text).toContain('"openapi":"3.');
      expect(text).toContain('"status":"ok"');
    }
    const headOnly = await rawRequest(system.origin, `${head('HEAD', '/v1/openapi.json')}\r\n${body}`);
    expect(headOnly.status).toBe(200);
    // A route that needs a key is still answered before the body, whatever the method.
    const refused = await rawRequest(system.origin, `${head('GET', '/v1/users/me')}\r\n${body}`);
    expect([refused.status, JSON.parse(refused.body).code, /^connection: close/im.test(refused.headers)]).toEqual([401, 'unauthorized', true]);
  }, 60_000);
});
