import { connect, Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * An answer the client does not read waits in the api's memory. A key's turn (API_MAX_CONCURRENT_PER_KEY) ended as its
 * answer was ready, so 150 connections of one key that asked for pages of large events and read nothing held 3.4 GB of
 * the api, and nothing ever let go of it.
 */
describe('answers a key does not read', () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', API_QUEUE_WAIT_MS: '1000' });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("hold the key's turns until they are read: the api's memory stays bounded, the key's next requests get 429, another account is served", async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const code = 'module.exports = { name: "Big", version: "1", props: { http: "$.interface.http" }, async run() { for (let i = 0; i < 20; i++) this.$emit({ i, pad: "x".repeat(500000) }); } };';
    const source = (await api.post('/sources', { component_code: code })).body.data;
    const url = source.configured_props.http.endpoint_url as string;
    await eventually(async () => (await fetch(url, { method: 'POST', body: 'x' })).status === 200, { what: 'the endpoint', timeoutMs: 30_000 });
    await eventually(async () => (await api.get(`/sources/${source.id}/event_summaries?limit=100`)).body.data?.length >= 20, { what: 'the events', timeoutMs: 90_000 });
    const pid = system.procs.get('api')!.pid!;
    const rssMb = (): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
    const before = rssMb();
    const port = Number(new URL(system.origin).port);
    const sockets: Socket[] = [];
    for (let i = 0; i < 150; i++) {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      // Reads nothing: the answer (about 10 MB) waits in the api.
      s.pause();
      s.write(`GET /v1/sources/${source.id}/event_summaries?expand=event&limit=100 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user.apiKey}\r\n\r\n`);
      sockets.push(s);
    }
    await new Promise((r) => setTimeout(r, 8000));
    expect(rssMb() - before).toBeLessThan(600);
    expect((await api.get('/users/me')).status).toBe(429);
    const other = client(system, createUser(system).apiKey);
    expect((await other.get('/users/me')).status).toBe(200);
    sockets.forEach((s) => s.destroy());
    await eventually(async () => (await api.get('/users/me')).status === 200, { what: 'the key answered again once its readers are gone', timeoutMs: 10_000 });
  }, 240_000);
});
