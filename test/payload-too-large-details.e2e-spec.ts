import { apiOnlySystem } from './support/system-with-user';
import { insertSource } from './events.helpers';

const PROPS = 'module.exports = { name: "Big props", version: "0.0.1", props: { http: "$.interface.http", s: { type: "string", optional: true }, o: { type: "object", optional: true } }, async run() {} };';

/** docs/api.md: every 413 names the bound it passed in details.limit_bytes, with details.bytes where the size is known. */
describe('413 answers say how large the refused input was', () => {
  const ctx = apiOnlySystem({ PROPS_MAX_BYTES: '2048', PROPS_DOCUMENT_MAX_BYTES: '4096', HTTP_MAX_BODY_BYTES: '2048', COMPONENT_MAX_BYTES: '4096' });

  it('gives details.bytes for a configured_props value and document over their bounds (the message said it, details did not)', async () => {
    const value = await ctx.api.post('/sources', { component_code: PROPS, configured_props: { s: 'é'.repeat(1025) } });
    expect([value.status, value.body]).toEqual([
      413,
      { error: 'configured_props.s is 2050 bytes; the limit is 2048 (PROPS_MAX_BYTES)', code: 'payload_too_large', details: { prop: 's', bytes: 2050, limit_bytes: 2048 } },
    ]);
    const props = { o: { a: 'x'.repeat(1500), b: 'y'.repeat(1500), c: 'z'.repeat(1500) } };
    const bytes = Buffer.byteLength(JSON.stringify(props));
    const doc = await ctx.api.post('/sources', { component_code: PROPS, configured_props: props });
    expect([doc.status, doc.body]).toEqual([
      413,
      { error: `configured_props is ${bytes} bytes; the limit is 4096 (PROPS_DOCUMENT_MAX_BYTES)`, code: 'payload_too_large', details: { field: 'configured_props', bytes, limit_bytes: 4096 } },
    ]);
  });

  it("gives details.bytes for a manual run's event over HTTP_MAX_BODY_BYTES", async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    const event = { text: 'x'.repeat(3000) };
    const res = await ctx.api.post(`/sources/${src}/run`, { event });
    expect([res.status, res.body]).toEqual([
      413,
      { error: 'event is larger than 2048 bytes', code: 'payload_too_large', details: { bytes: Buffer.byteLength(JSON.stringify(event)), limit_bytes: 2048 } },
    ]);
  });

  it('gives details.bytes for a request body over the api body limit when its Content-Length declared it (none for a chunked one)', async () => {
    const limit = 2 * 4096 + 1_048_576;
    const body = JSON.stringify({ component_code: 'x'.repeat(limit) });
    const post = (b: string | ReadableStream<Uint8Array>) => fetch(`${ctx.system.baseUrl}/components`, { method: 'POST', headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': 'application/json' }, body: b, duplex: 'half' } as RequestInit);
    const declared = await post(body);
    expect([declared.status, await declared.json()]).toEqual([
      413,
      { error: `the request body is larger than the ${limit} bytes the api accepts`, code: 'payload_too_large', details: { bytes: Buffer.byteLength(body), limit_bytes: limit } },
    ]);
    const chunked = await post(new Blob([body]).stream());
    expect([chunked.status, await chunked.json()]).toEqual([
      413,
      { error: `the request body is larger than the ${limit} bytes the api accepts`, code: 'payload_too_large', details: { limit_bytes: limit } },
    ]);
  });

  it("gives details.bytes for a body over HTTP_MAX_BODY_BYTES at a source's HTTP endpoint when its Content-Length declared it", async () => {
    const src = await ctx.api.post('/sources', { component_code: PROPS });
    expect(src.status).toBe(200);
    const url = src.body.data.configured_props.http.endpoint_url as string;
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const res = await fetch(url, { method, headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(3000) });
      expect([method, res.status, await res.json()]).toEqual([method, 413, { error: 'request body is larger than 2048 bytes', code: 'payload_too_large', details: { bytes: 3000, limit_bytes: 2048 } }]);
    }
  });
});
