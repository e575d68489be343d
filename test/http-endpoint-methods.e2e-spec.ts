import { request } from 'node:http';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/** Emits what `run` saw of the request. */
const ECHO_SOURCE = `module.exports = {
  name: "Method echo", version: "1",
  props: { http: { type: "$.interface.http" } },
  async run(event) { this.$emit({ method: event.method, path: event.path, bodyRaw: event.bodyRaw }); },
};`;

interface Sent {
  status: number;
  body: string;
}

/** A request by node:http: any method, and a Host header of our choice (no DNS for the test domain). */
const send = (origin: string, method: string, path: string, body: string, headers: Record<string, string> = {}): Promise<Sent> =>
  new Promise((resolve, reject) => {
    const { port, host } = new URL(origin);
    const req = request({ host: '127.0.0.1', port, path, method, headers: { host, ...headers } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });

/** docs/operations.md: `ANY /e/<endpoint_key>[/<any path>]` — WebDAV, CalDAV and other methods reach `run` as sent. */
describe('HTTP endpoints take every method', () => {
  let system: System;
  let user: TestUser;

  beforeAll(async () => {
    system = await startSystem({ ENDPOINT_DOMAIN: 'hooks.example.test', HTTP_MAX_BODY_BYTES: '2048' });
    user = createUser(system);
  });
  afterAll(async () => system?.stop());

  it('runs the source with the method and body of a PROPFIND, a REPORT and a bodiless MKCOL; over the body limit is 413, an unreadable method 400', async () => {
    const api = client(system, user.apiKey);
    const created = await api.post('/sources', { component_code: ECHO_SOURCE });
    expect(created.status).toBe(200);
    const sourceId: string = created.body.data.id;
    const endpointUrl = new URL(created.body.data.configured_props.http.endpoint_url as string);
    const key = endpointUrl.hostname.split('.')[0];
    const xml = { 'content-type': 'application/xml; charset=utf-8' };

    const propfind = '<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:displayname/></d:prop></d:propfind>';
    expect(await send(system.origin, 'PROPFIND', `/e/${key}/dav/a`, propfind, { ...xml, depth: '1' })).toEqual({ status: 200, body: '{"success":true}' });
    // The host-based form (`<endpoint_key>.<ENDPOINT_DOMAIN>`) routes the same methods.
    const report = '<c:calendar-query xmlns:c="urn:ietf:params:xml:ns:caldav"/>';
    expect(await send(`http://${endpointUrl.host}`, 'REPORT', '/cal', report, xml).then((r) => r.status)).toBe(200);
    expect((await send(system.origin, 'MKCOL', `/e/${key}`, '')).status).toBe(200);

    // A method Node's HTTP parser cannot read at all is its 400, in the error shape (protocol-errors.ts).
    const unreadable = await send(system.origin, 'BREW', `/e/${key}`, '');
    expect([unreadable.status, JSON.parse(unreadable.body).code]).toEqual([400, 'invalid_request']);
    // QUERY (RFC 10008) must say what its body is: without a Content-Type it is refused (Fastify's rule, the RFC's).
    const query = await send(system.origin, 'QUERY', `/e/${key}`, '');
    expect([query.status, JSON.parse(query.body).code]).toEqual([400, 'invalid_request']);
    const big = await send(system.origin, 'PROPFIND', `/e/${key}`, 'x'.repeat(4096), xml);
    expect(big.status).toBe(413);
    expect(JSON.parse(big.body)).toMatchObject({ code: 'payload_too_large' });

    const events = await eventually(async () => {
      const list = await api.get(`/sources/${sourceId}/event_summaries`);
      return list.body?.data?.length === 3 ? (list.body.data as { event: unknown }[]).map((s) => s.event) : undefined;
    }, { timeoutMs: 30_000, what: 'three events' });
    expect(events).toEqual(expect.arrayContaining([
      { method: 'PROPFIND', path: '/dav/a', bodyRaw: propfind },
      { method: 'REPORT', path: '/cal', bodyRaw: report },
      { method: 'MKCOL', path: '/', bodyRaw: '' },
    ]));
  });
});
