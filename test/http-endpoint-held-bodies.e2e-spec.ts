import { connect, Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { client, createUser } from './support/accounts';
import { rawRequest } from './support/raw-http';
import { eventually, startSystem, System } from './support/system';

/**
 * Bodies to endpoints are read whole before the endpoint is looked up: one address holding 1,000 bodies of 512 KB
 * open (to made-up endpoint keys, no account needed) held 510 MB of the api until its request timeout.
 */
describe('endpoint request bodies held open (HTTP_BODY_BYTES_IN_FLIGHT)', () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0' });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("keeps the api's memory within the budget, a quarter of it per client address: bodies past it are answered 503 unread, another address is served, and the endpoint takes requests again once they are gone", async () => {
    const api = client(system, createUser(system).apiKey);
    const source = (await api.post('/sources', { component_code: 'module.exports = { name: "H", version: "1", props: { http: "$.interface.http" }, async run() {} };' })).body.data;
    const url = source.configured_props.http.endpoint_url as string;
    await eventually(async () => (await fetch(url, { method: 'POST', body: 'x' })).status === 200, { what: 'the endpoint', timeoutMs: 30_000 });
    const pid = system.procs.get('api')!.pid!;
    const rssMb = (): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
    const before = rssMb();
    const port = Number(new URL(system.origin).port);
    const body = Buffer.alloc(512 * 1024 - 1, 'a');
    const refused: string[] = [];
    const sockets: Socket[] = [];
    for (let i = 0; i < 1000; i++) {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      let answer = '';
      s.on('data', (d: Buffer) => {
        answer += d.toString();
        if (answer.includes('\r\n\r\n{') && answer.endsWith('}')) refused.push(answer);
      });
      s.write(`POST /e/en${String(i).padStart(22, '0')} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${512 * 1024}\r\n\r\n`);
      s.write(body);
      sockets.push(s);
    }
    // One address takes a quarter of the budget (32 MiB: 64 of these bodies); the others are refused unread.
    await eventually(async () => refused.length >= 900, { what: '503 answers to the bodies past the budget', timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 2000));
    expect(rssMb() - before).toBeLessThan(150);
    // Another client address still sends its body meanwhile.
    const { host, pathname } = new URL(url);
    const other = await rawRequest(system.origin, `POST ${pathname} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello`, { localAddress: '127.0.0.2' });
    expect(other.status).toBe(200);
    expect(refused[0]).toMatch(/^HTTP\/1\.1 503 /);
    expect(refused[0].toLowerCase()).toContain('retry-after: 1');
    expect(JSON.parse(refused[0].slice(refused[0].indexOf('\r\n\r\n') + 4))).toEqual({ error: expect.stringContaining('HTTP_BODY_BYTES_IN_FLIGHT'), code: 'unavailable', details: { retry_after_seconds: 1 } });
    sockets.forEach((s) => s.destroy());
    await eventually(async () => (await fetch(url, { method: 'POST', body: 'y' })).status === 200, { what: 'the endpoint once the held bodies are gone', timeoutMs: 10_000 });
  }, 90_000);
});
