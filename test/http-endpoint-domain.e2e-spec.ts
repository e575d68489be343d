import { request } from 'node:http';
import { connect, NatsConnection } from 'nats';
import { natsAdmin } from './support/env';
import { decodeJson, InvocationMessage, Names, partitionOf } from '@app/contracts';
import { client, createUser, TestUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { eventually, startSystem, System } from './support/system';

/** A request to the api's address with another Host header (no DNS for the test domain). */
const sendAs = (origin: string, host: string, path: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; cookies: string[] }> =>
  new Promise((resolve, reject) => {
    const { port } = new URL(origin);
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers: { host, 'content-type': 'application/json', ...headers } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, cookies: res.headers['set-cookie'] ?? [] }));
    });
    req.on('error', reject);
    req.end(body);
  });

/** DESIGN.md: with a domain configured, `<endpoint_key>.<domain>` is the source's HTTP interface (any path). */
describe('host-based HTTP endpoints (ENDPOINT_DOMAIN)', () => {
  let system: System;
  let user: TestUser;
  let nc: NatsConnection;

  beforeAll(async () => {
    system = await startSystem({ ENDPOINT_DOMAIN: 'hooks.example.test' }, { apps: ['api'] });
    user = createUser(system);
    nc = await connect(natsAdmin());
  });
  afterAll(async () => {
    await nc?.close();
    await system?.stop();
  });

  const send = (host: string, path: string, body: string, headers?: Record<string, string>) => sendAs(system.origin, host, path, body, headers);

  it('gives endpoint URLs on the domain and stores a request to <key>.<domain>/<path> like one to /e/<key>/<path>', async () => {
    const created = await client(system, user.apiKey).post('/sources', { component_code: HTTP_SOURCE });
    expect(created.status).toBe(200);
    const { id } = created.body.data;
    const endpointUrl: string = created.body.data.configured_props.http.endpoint_url;
    const { port } = new URL(system.origin);
    expect(endpointUrl).toMatch(new RegExp(`^http://en[a-z0-9]+\\.hooks\\.example\\.test:${port}$`));
    const host = new URL(endpointUrl).host;

    const res = await send(host, '/hooks/a?x=1', '{"hello":"host"}');
    expect(res).toEqual({ status: 200, body: '{"success":true}', cookies: [] });
    const names = new Names(system.natsPrefix);
    const jsm = await nc.jetstreamManager();
    const m = await jsm.streams.getMessage(names.invocationsStream, { last_by_subj: names.invocation(partitionOf(id, Number(system.env.PARTITIONS)), id) });
    expect(decodeJson<InvocationMessage>(m.data).event).toMatchObject({ method: 'POST', path: '/hooks/a', query: { x: '1' }, body: { hello: 'host' }, url: `${endpointUrl}/hooks/a?x=1` });

    // The path form keeps working; an unknown key on the domain is the ingress's 404; the API is untouched by the domain.
    expect((await fetch(`${system.origin}/e/${host.split('.')[0]}`, { method: 'POST', body: '' })).status).toBe(200);
    const unknown = await send(`ennotakey.hooks.example.test:${port}`, '/', '');
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body)).toMatchObject({ code: 'not_found' });
    expect((await client(system, user.apiKey).get('/users/me')).status).toBe(200);
  });
});

describe('cookies of host-based HTTP endpoints', () => {
  let system: System;
  let user: TestUser;

  beforeAll(async () => {
    system = await startSystem({ ENDPOINT_DOMAIN: 'hooks.example.test' });
    user = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const send = (host: string, path: string, body: string, headers?: Record<string, string>) => sendAs(system.origin, host, path, body, headers);

  it("keeps a component's cookies on its endpoint's own host as set (Domain dropped), and under /e/<key> on the shared origin", async () => {
    const code = `module.exports = {
      name: "Cookies", version: "1",
      props: { http: { type: "$.interface.http", customResponse: true } },
      async run() { this.http.respond({ status: 200, headers: { "Set-Cookie": ["a=1; Path=/app; Domain=hooks.example.test; HttpOnly", "b=2"] }, body: "ok" }); },
    };`;
    const created = await client(system, user.apiKey).post('/sources', { component_code: code });
    expect(created.status).toBe(200);
    const host = new URL(created.body.data.configured_props.http.endpoint_url as string).host;
    const key = host.split('.')[0];
    const onHost = await eventually(async () => {
      const r = await send(host, '/app', '');
      return r.status === 200 ? r : undefined;
    }, { what: 'the endpoint to answer', timeoutMs: 30_000 });
    expect(onHost.cookies).toEqual(['a=1; Path=/app; HttpOnly', 'b=2']);
    const shared = await send(new URL(system.origin).host, `/e/${key}/app`, '');
    expect(shared.cookies).toEqual([`a=1; HttpOnly; Path=/e/${key}`, `b=2; Path=/e/${key}`]);
    // X-Forwarded-Host (which a tenant's page may send with a request to the shared origin, CORS allowing) routes the
    // request, but does not make the shared origin the endpoint's own host: only TRUST_PROXY's proxies are believed.
    for (const path of ['/app', `/e/${key}/app`]) {
      const forwarded = await send(new URL(system.origin).host, path, '', { 'x-forwarded-host': host });
      expect([path, forwarded.status, forwarded.cookies]).toEqual([path, 200, [`a=1; HttpOnly; Path=/e/${key}`, `b=2; Path=/e/${key}`]]);
    }
  });
});
