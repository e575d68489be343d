import { connect, Socket } from 'node:net';
import { admin, client, createUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { startSystem, System } from './support/system';

/**
 * A hostile tenant against the API contract, fifth pass: what earlier passes left.
 */
describe('API red team, fifth pass', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({ REGISTRY_DIR: 'off' }, { apps: ['api'] });
  }, 120_000);
  afterAll(async () => {
    await system?.stop();
  });

  /** A request whose headers and first bytes of body are sent now; `finish()` sends the rest and reads the answer. */
  const slowRequest = async (path: string, key: string, body: string): Promise<{ finish: () => Promise<{ status: number; body: string }> }> => {
    const { hostname, port } = new URL(system.origin);
    const socket: Socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (d) => chunks.push(d));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nConnection: close\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 5)}`);
    // The api has its head and is waiting for the rest of its body.
    await new Promise((resolve) => setTimeout(resolve, 300));
    return {
      finish: async () => {
        socket.write(body.slice(5));
        await closed;
        const text = Buffer.concat(chunks).toString('utf8');
        return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), body: text.slice(text.indexOf('\r\n\r\n') + 4) };
      },
    };
  };

  it("refuses a request whose body comes after its key was revoked or its membership ended (the key was checked only before the body: a revoked key's POST /webhooks created one)", async () => {
    const user = createUser(system);
    const slow = await slowRequest('/v1/webhooks', user.apiKey, JSON.stringify({ url: 'https://example.com/after-revoke' }));
    admin(system, ['keys', 'revoke', '--user', user.id]);
    const answer = await slow.finish();
    expect([answer.status, JSON.parse(answer.body)]).toEqual([401, { error: 'invalid API key', code: 'unauthorized' }]);
    const key = admin(system, ['keys', 'rotate', '--user', user.id]).api_key;
    expect((await client(system, key).get('/users/me/webhooks')).body.page_info.total_count).toBe(0);

    const member = createUser(system);
    const org = admin(system, ['orgs', 'create', '--name', 'org', '--orgname', `red5-${member.id.slice(2, 10).toLowerCase()}`]).id;
    admin(system, ['orgs', 'add-member', '--org', org, '--user', member.id]);
    const inOrg = await slowRequest(`/v1/webhooks?org_id=${org}`, member.apiKey, JSON.stringify({ url: 'https://example.com/after-leaving' }));
    admin(system, ['orgs', 'remove-member', '--org', org, '--user', member.id]);
    const left = await inOrg.finish();
    expect([left.status, JSON.parse(left.body)]).toEqual([404, { error: `org ${org} not found`, code: 'not_found', details: { org_id: org } }]);
    const other = createUser(system);
    admin(system, ['orgs', 'add-member', '--org', org, '--user', other.id]);
    expect((await client(system, other.apiKey).get(`/orgs/${org}/webhooks`)).body.page_info.total_count).toBe(0);
  });

  it('refuses a key given twice in the JSON text of configured_props sent in the query string or a form, as in a JSON body (the last value was kept)', async () => {
    const user = createUser(system);
    const component = (await client(system, user.apiKey).post('/components', { component_code: HTTP_SOURCE.replace('db: "$.service.db"', 'db: "$.service.db", s: { type: "string", optional: true }') })).body.data.id;
    const post = async (path: string, body?: string, type = 'application/json') => {
      const res = await fetch(`${system.baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${user.apiKey}`, ...(body ? { 'content-type': type } : {}) }, body });
      return [res.status, await res.json()];
    };
    const text = encodeURIComponent('{"s":"a","s":"b"}');
    // Where it was (details.in), as docs/api.md says of every parameter given twice (the query string's said nowhere).
    const refused = (where: 'query' | 'body') => ({ error: 'configured_props.s was given more than once', code: 'invalid_request', details: { in: where, field: 'configured_props.s' } });
    expect(await post(`/sources?component_id=${component}&configured_props=${text}`)).toEqual([400, refused('query')]);
    expect(await post('/sources', `component_id=${component}&configured_props=${text}`, 'application/x-www-form-urlencoded')).toEqual([400, refused('body')]);
    expect(await post(`/components/${component}/props/reload?configured_props=${text}`)).toEqual([400, refused('query')]);
    expect(await post(`/components/${component}/props/s/options?configured_props=${text}`)).toEqual([400, refused('query')]);
    // As a JSON body answers it.
    expect(await post('/sources', `{"component_id":"${component}","configured_props":{"s":"a","s":"b"}}`)).toEqual([400, refused('body')]);
    expect((await client(system, user.apiKey).get('/users/me/sources')).body.page_info.total_count).toBe(0);
  });
});
