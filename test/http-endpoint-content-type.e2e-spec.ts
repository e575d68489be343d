import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * The HTTP interface takes any body as sent; Fastify refused a `Content-Type` it could not read as a media type
 * (`json`, an empty one, `;;;=`) with `415 {"error":"Unsupported Media Type","code":"invalid_request"}` before the
 * source ran: webhook senders that write such a header never reached it. Now the body reaches the source as text.
 */
const ECHO = `module.exports = { name: "Echo", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) { this.http.respond({ status: 200, body: { type: event.headers["content-type"], bodyRaw: event.bodyRaw, body: event.body } }); } };`;

describe('a Content-Type that is not a media type at an HTTP endpoint', () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0' }, { apps: ['api', 'runner'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('reaches the source with its body as text and the header as sent', async () => {
    const user = createUser(system);
    const res = await client(system, user.apiKey).post('/sources', { component_code: ECHO });
    expect(res.status).toBe(200);
    const url = res.body.data.configured_props.http.endpoint_url as string;
    await eventually(async () => (await fetch(url)).status === 200, { what: 'the endpoint', timeoutMs: 30_000 });
    for (const type of ['json', '', ';;;=', 'application/json; charset=utf-8']) {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': type }, body: '{"a":1}' });
      const body = type.startsWith('application/json') ? { a: 1 } : '{"a":1}';
      expect([type, r.status, await r.json()]).toEqual([type, 200, { type, bodyRaw: '{"a":1}', body }]);
    }
    // The charset of a media type is still read, and an unknown one still refused.
    const latin1 = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain; charset=iso-8859-1' }, body: Buffer.from([0x63, 0xe9]) });
    expect(await latin1.json()).toEqual({ type: 'text/plain; charset=iso-8859-1', bodyRaw: 'cé', body: 'cé' });
    const unknown = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain; charset=klingon' }, body: 'x' });
    expect([unknown.status, ((await unknown.json()) as { code: string }).code]).toEqual([415, 'unsupported_media_type']);
  });
});
