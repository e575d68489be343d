import { connect } from 'nats';
import { decodeJson, Names, partitionOf } from '@app/contracts';
import { apiOnlySystem } from './support/system-with-user';
import { natsAdmin } from './support/env';
import { HTTP_SOURCE } from './support/components';
import { rawRequest } from './support/raw-http';
import { eventually } from './support/system';
import { insertSource, sql } from './events.helpers';

/** The error body every failure has. */
function expectErrorBody(body: unknown, code: string): void {
  expect(body).toMatchObject({ error: expect.any(String), code });
  expect(Object.keys(body as object).every((k) => ['error', 'code', 'details'].includes(k))).toBe(true);
}

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

/** Hostile inputs an audit of every route found answered wrongly: each was a 200 that dropped input, or a 500. */
describe('API contract: bodies on DELETE routes, webhook URLs, deep JSON at an HTTP endpoint', () => {
  const ctx = apiOnlySystem();

  /** Five summaries 1700000000001-0 … 1700000000005-0 written straight to Postgres (no delivery app needed). */
  const sourceWithEvents = async (): Promise<string> => {
    const src = await insertSource(ctx.system, ctx.user.id);
    for (let i = 1; i <= 5; i++) {
      await sql(ctx.system, `insert into event_summaries (emitter_id, id, id_ms, id_seq, name, channel_class, owner_id, emit_id, summary, event, meta, size_bytes, indexed_at_ms)
        values ($1, $2, $3, 0, '', 'emits', $4, $5, '', $6, '{}', 10, $3)`, [src, `${1_700_000_000_000 + i}-0`, 1_700_000_000_000 + i, ctx.user.id, `emit-${i}`, JSON.stringify({ n: i })]);
    }
    return src;
  };
  const ids = async (src: string): Promise<string[]> => (await ctx.api.get(`/sources/${src}/event_summaries?limit=100`)).body.data.map((d: { id: string }) => d.id);

  it('DELETE /sources/{id}/events reads start_id and end_id from a JSON body too, never deleting everything instead', async () => {
    const src = await sourceWithEvents();
    const res = await fetch(`${ctx.system.baseUrl}/sources/${src}/events`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ start_id: '1700000000002-0', end_id: '1700000000003-0' }),
    });
    expect(res.status).toBe(202);
    await eventually(async () => (await ids(src)).length === 3, { what: 'the range deleted' });
    expect(await ids(src)).toEqual(['1700000000005-0', '1700000000004-0', '1700000000001-0']);
  });

  it('names where a missing required field was looked for: the query of a request without a body, else the body', async () => {
    const webhook = (await ctx.api.post('/webhooks', { url: 'https://example.com/h' })).body.data.id as string;
    const inQuery = await ctx.api.post(`/subscriptions?listener_id=${webhook}`);
    expect([inQuery.status, inQuery.body]).toEqual([400, { error: 'emitter_id is required', code: 'invalid_request', details: { in: 'query', fields: ['emitter_id'] } }]);
    const inBody = await ctx.api.post('/subscriptions', { listener_id: webhook });
    expect([inBody.status, inBody.body]).toEqual([400, { error: 'emitter_id is required', code: 'invalid_request', details: { in: 'body', fields: ['emitter_id'] } }]);
  });

  it('refuses a body field a DELETE route does not take, or of the wrong type, before acting', async () => {
    const src = await sourceWithEvents();
    const del = (path: string, body: string) =>
      fetch(`${ctx.system.baseUrl}${path}`, { method: 'DELETE', headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': 'application/json' }, body });
    const wrongType = await del(`/sources/${src}/events`, '{"start_id":5}');
    expect(wrongType.status).toBe(400);
    expect(await wrongType.json()).toMatchObject({ code: 'invalid_request', details: { in: 'body', field: 'start_id' } });
    const unknown = await del(`/sources/${src}/events`, '{"from":"1700000000002-0"}');
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({ error: 'unknown field: from', code: 'invalid_request', details: { in: 'body', fields: ['from'] } });
    expect(await ids(src)).toHaveLength(5);

    const webhook = (await ctx.api.post('/webhooks', { url: 'https://example.com/h' })).body.data.id as string;
    for (const path of [`/sources/${src}`, `/webhooks/${webhook}`]) {
      const res = await del(path, '{"force":true}');
      expect([path, res.status]).toEqual([path, 400]);
      expectErrorBody(await res.json(), 'invalid_request');
      const notObject = await del(path, '"yes"');
      expect([path, notObject.status]).toEqual([path, 400]);
    }
    expect((await ctx.api.get(`/sources/${src}`)).status).toBe(200);
    expect((await ctx.api.get(`/webhooks/${webhook}`)).status).toBe(200);
    // No body, an empty one or `{}` (what some clients send with every DELETE) is no input.
    expect((await del(`/webhooks/${webhook}`, '{}')).status).toBe(204);
    expect((await del(`/sources/${src}`, '')).status).toBe(204);
  });

  it.each([['http:///hook'], ['http:/example.com/hook'], ['http:example.com'], ['https:\\\\example.com\\hook'], ['https://example.com/a\nb'], ['https://exa\tmple.com/']])(
    'refuses the webhook url %j (no hostname as written, or a control character) on create and update',
    async (url) => {
      const created = await ctx.api.post('/webhooks', { url });
      expect(created.status).toBe(400);
      expect(created.body).toEqual({ error: expect.any(String), code: 'invalid_request', details: expect.objectContaining({ field: 'url' }) });
      const hook = (await ctx.api.post('/webhooks', { url: 'https://example.com/ok' })).body.data.id as string;
      const updated = await ctx.api.put(`/webhooks/${hook}`, { url });
      expect(updated.status).toBe(400);
      expect((await ctx.api.get(`/webhooks/${hook}`)).body.data.url).toBe('https://example.com/ok');
    },
  );

  it.each([['http:///source.mjs'], ['https:example.com/source.mjs'], ['https://exa\tmple.com/source.mjs'], ['file:///etc/passwd']])('refuses the component_url %j the same way', async (url) => {
    const res = await ctx.api.post('/components', { component_url: url });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.stringMatching(/^component_url /), code: 'invalid_request', details: expect.objectContaining({ field: 'component_url' }) });
  });

  it('answers a body of 200,000 unknown fields in a short error, not by echoing every name', async () => {
    const body = `{${Array.from({ length: 200_000 }, (_, i) => `"k${i}":1`).join(',')}}`;
    const res = await fetch(`${ctx.system.baseUrl}/webhooks`, { method: 'POST', headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': 'application/json' }, body });
    const text = await res.text();
    expect(res.status).toBe(400);
    expect(text.length).toBeLessThan(2000);
    expect(JSON.parse(text)).toMatchObject({ error: expect.stringMatching(/^unknown fields: k0, k1, .* and 199980 more$/), code: 'invalid_request', details: { in: 'body', more: 199_980 } });
  });

  it('refuses a form field given twice, as it refuses a repeated query parameter, instead of keeping the last', async () => {
    const form = (body: string) =>
      fetch(`${ctx.system.baseUrl}/webhooks`, { method: 'POST', headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': 'application/x-www-form-urlencoded' }, body });
    const twice = await form('url=https%3A%2F%2Fa.example.com%2F&url=https%3A%2F%2Fb.example.com%2F');
    expect(twice.status).toBe(400);
    expect(await twice.json()).toEqual({ error: 'url was given more than once', code: 'invalid_request', details: { in: 'body', field: 'url' } });
    const unknownTwice = await form('url=https%3A%2F%2Fa.example.com%2F&name=a&name=b');
    expect(await unknownTwice.json()).toEqual({ error: 'name was given more than once', code: 'invalid_request', details: { in: 'body', field: 'name' } });
    const query = await ctx.api.post('/webhooks?url=https://a.example.com/&url=https://b.example.com/');
    expect([query.status, query.body]).toEqual([400, { error: 'url was given more than once', code: 'invalid_request', details: { in: 'query', field: 'url' } }]);
    const once = await form('url=https%3A%2F%2Fa.example.com%2F&name=ci');
    expect(once.status).toBe(200);
    expect(((await once.json()) as { data: { url: string; name: string } }).data).toMatchObject({ url: 'https://a.example.com/', name: 'ci' });
  });

  it('reads a form body as text, as the query string: active=false and page=1 are what they name (each was "must be a boolean / an integer")', async () => {
    const form = (method: string, path: string, body: string) =>
      fetch(`${ctx.system.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': 'application/x-www-form-urlencoded' }, body }).then(async (r) => ({ status: r.status, body: (await r.json()) as any })); // eslint-disable-line @typescript-eslint/no-explicit-any
    const wh = (await ctx.api.post('/webhooks', { url: 'https://a.example.com/' })).body.data;
    const off = await form('PUT', `/webhooks/${wh.id}`, 'active=false&name=form');
    expect([off.status, off.body.data?.active, off.body.data?.name]).toEqual([200, false, 'form']);
    expect((await ctx.api.get(`/webhooks/${wh.id}`)).body.data.active).toBe(false);
    const on = await form('PUT', `/webhooks/${wh.id}`, 'active=true');
    expect([on.status, on.body.data?.active]).toEqual([200, true]);
    // Text that names no boolean or integer is refused as in the query string, naming the body.
    const bad = await form('PUT', `/webhooks/${wh.id}`, 'active=maybe');
    expect(bad.status).toBe(400);
    expectErrorBody(bad.body, 'invalid_request');
    expect(bad.body.details).toMatchObject({ in: 'body', field: 'active' });

    const code = 'module.exports = { name: "Opts", version: "1", props: { color: { type: "string", options: ["red", "blue"] } }, async run() {} };';
    const sc = (await ctx.api.post('/components', { component_code: code })).body.data;
    const page = await form('POST', `/components/${sc.id}/props/color/options`, 'page=1');
    expect([page.status, page.body]).toEqual([200, (await ctx.api.post(`/components/${sc.id}/props/color/options?page=1`)).body]);
    for (const text of ['1.5', '+1', '']) {
      const refused = await form('POST', `/components/${sc.id}/props/color/options`, `page=${encodeURIComponent(text)}`);
      expect([text, refused.status, refused.body.code, refused.body.details?.in, refused.body.details?.field]).toEqual([text, 400, 'invalid_request', 'body', 'page']);
      expect(refused.body.error).toBe('page must be an integer written in digits');
    }
    // A JSON body keeps JSON's types: "false" is a string there, not a boolean.
    const json = await ctx.api.put(`/webhooks/${wh.id}`, { active: 'false' });
    expect([json.status, json.body.details?.field]).toEqual([400, 'active']);
  });

  it('refuses a key given twice in a JSON body, at any depth, as a repeated form field (the last value was kept)', async () => {
    const post = (path: string, body: string, type = 'application/json') =>
      fetch(`${ctx.system.baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': type }, body });
    const twice = (field: string) => ({ error: `${field} was given more than once`, code: 'invalid_request', details: { in: 'body', field } });
    const url = await post('/webhooks', '{"url":"ftp://y","url":"http://x.com"}');
    expect([url.status, await url.json()]).toEqual([400, twice('url')]);
    const name = await post('/webhooks', '{"url":"http://x.com", "name":"dupA",\n "n\\u0061me" : "dupB"}');
    expect([name.status, await name.json()]).toEqual([400, twice('name')]);
    // `curl -d '{…}'`: JSON labelled as a form is read as JSON, and refused alike.
    const asForm = await post('/webhooks', '{"url":"http://x.com","name":"a","name":"b"}', 'application/x-www-form-urlencoded');
    expect([asForm.status, await asForm.json()]).toEqual([400, twice('name')]);
    const nestedKey = await post('/sources', JSON.stringify({ component_code: HTTP_SOURCE, configured_props: { x: 1 } }).replace('"x":1', '"x":1,"x":2'));
    expect([nestedKey.status, await nestedKey.json()]).toEqual([400, twice('configured_props.x')]);
    const once = await post('/webhooks', '{"url":"http://x.com","name":"n","description":"name"}');
    expect([once.status, ((await once.json()) as { data: { name: string } }).data.name]).toEqual([200, 'n']);
    // The HTTP interface of a source takes any JSON as its event, as it always did.
    const created = await ctx.api.post('/sources', { component_code: HTTP_SOURCE });
    const endpoint = await fetch(created.body.data.configured_props.http.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1,"a":2}' });
    expect(endpoint.status).toBe(200);
  });

  it('says a body that is not UTF-8 is not (it said "Request body size did not match Content-Length")', async () => {
    const bytes = Buffer.concat([Buffer.from('{"url":"http://x.com","name":"a'), Buffer.from([0xff]), Buffer.from('b"}')]);
    for (const type of ['application/json', 'application/x-www-form-urlencoded', 'text/plain']) {
      const res = await fetch(`${ctx.system.baseUrl}/webhooks`, { method: 'POST', headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': type }, body: bytes });
      expect([type, res.status, await res.json()]).toEqual([type, 400, { error: 'the request body is not valid UTF-8', code: 'invalid_request', details: { reason: 'invalid_utf8' } }]);
    }
    const utf8 = await fetch(`${ctx.system.baseUrl}/webhooks`, { method: 'POST', headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': 'application/json' }, body: Buffer.from('{"url":"http://x.com","name":"aéb"}') });
    expect([utf8.status, ((await utf8.json()) as { data: { name: string } }).data.name]).toEqual([200, 'aéb']);
  });

  it('reads an API body in the charset its Content-Type declares, and answers 415 for one it does not know (UTF-16 JSON said "contains a NUL character", charset=klingon was read as UTF-8)', async () => {
    const post = (type: string, body: Buffer) => fetch(`${ctx.system.baseUrl}/webhooks`, { method: 'POST', headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': type }, body });
    const named = async (res: Response): Promise<[number, unknown]> => [res.status, ((await res.json()) as { data?: { name: string } }).data?.name];
    const json = (name: string) => JSON.stringify({ url: 'https://example.com/charset', name });
    expect(await named(await post('application/json; charset=utf-16le', Buffer.from(json('é☃'), 'utf16le')))).toEqual([200, 'é☃']);
    expect(await named(await post('application/json; charset=ISO-8859-1', Buffer.from(json('café'), 'latin1')))).toEqual([200, 'café']);
    expect(await named(await post('text/plain; charset="windows-1252"', Buffer.from(json('\x80 \x93'), 'latin1')))).toEqual([200, '€ “']);
    expect(await named(await post('application/x-www-form-urlencoded; charset=windows-1252', Buffer.from('url=https%3A%2F%2Fexample.com%2Fc&name=caf%E9+%80')))).toEqual([200, 'café €']);
    expect(await named(await post('application/json; charset=utf-8', Buffer.from(json('é'))))).toEqual([200, 'é']);
    for (const charset of ['klingon', 'binary', '']) {
      const res = await post(`application/json; charset=${charset}`, Buffer.from(json('x')));
      expect([charset, res.status, await res.json()]).toEqual([
        charset,
        415,
        { error: `the request body's charset ${charset} is not supported: send it as UTF-8 (or in a charset such as iso-8859-1, windows-1252 or utf-16le)`, code: 'unsupported_media_type', details: { header: 'content-type', charset } },
      ]);
    }
    // Without a charset a body is UTF-8, and bytes that are not are refused as before.
    const res = await post('application/json', Buffer.from(json('café'), 'latin1'));
    expect([res.status, await res.json()]).toEqual([400, { error: 'the request body is not valid UTF-8', code: 'invalid_request', details: { reason: 'invalid_utf8' } }]);
  });

  it('reads an API body of a +json type (application/merge-patch+json, application/vnd.api+json) as JSON, as the HTTP endpoints of sources do (it was a 415)', async () => {
    const send = (method: string, path: string, type: string, body: Buffer | string) =>
      fetch(`${ctx.system.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': type }, body });
    const json = (name: string) => JSON.stringify({ url: 'https://example.com/plus-json', name });
    const created = await send('POST', '/webhooks', 'application/vnd.api+json', json('vnd'));
    const createdBody = (await created.json()) as { data: { id: string } };
    expect([created.status, createdBody]).toEqual([200, expect.objectContaining({ data: expect.objectContaining({ name: 'vnd' }) })]);
    const id = createdBody.data.id;
    expect((await ctx.api.get(`/webhooks/${id}`)).body.data.name).toBe('vnd');
    const { id: source, component_id: componentId } = (await ctx.api.post('/sources', { component_code: HTTP_SOURCE })).body.data as { id: string; component_id: string };
    const patched = await send('PUT', `/sources/${source}`, 'application/merge-patch+json', JSON.stringify({ component_id: componentId, name: 'patched' }));
    expect(patched.status).toBe(200);
    expect((await ctx.api.get(`/sources/${source}`)).body.data.name).toBe('patched');
    // Its charset is read as for application/json, an unknown one is a 415, and the body is checked as any JSON body.
    const latin = await send('POST', '/webhooks', 'Application/Merge-Patch+JSON; charset=ISO-8859-1', Buffer.from(json('café'), 'latin1'));
    expect([latin.status, ((await latin.json()) as { data: { name: string } }).data.name]).toEqual([200, 'café']);
    const klingon = await send('POST', '/webhooks', 'application/vnd.api+json; charset=klingon', json('x'));
    expect([klingon.status, ((await klingon.json()) as { code: string }).code]).toEqual([415, 'unsupported_media_type']);
    const broken = await send('POST', '/webhooks', 'application/merge-patch+json', '{"url":');
    expect([broken.status, await broken.json()]).toEqual([400, { error: 'the request body is not valid JSON', code: 'invalid_request' }]);
    const unknown = await send('POST', '/webhooks', 'application/merge-patch+json', '{"url":"https://example.com/x","bogus":1}');
    expect([unknown.status, ((await unknown.json()) as { error: string }).error]).toEqual([400, 'unknown field: bogus']);
  });

  it('reads a Content-Type in any letter case as its lower-case form (RFC 9110: media types and charset are case-insensitive), at the API and at an HTTP endpoint (an upper-case form type was read as JSON: "not valid JSON")', async () => {
    const send = (method: string, path: string, type: string, body: Buffer | string) =>
      fetch(`${ctx.system.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': type }, body }).then(async (r) => ({ status: r.status, body: (await r.json()) as any })); // eslint-disable-line @typescript-eslint/no-explicit-any
    const json = await send('POST', '/webhooks', 'Application/JSON', JSON.stringify({ url: 'https://example.com/case', name: 'json' }));
    expect([json.status, json.body.data?.name]).toEqual([200, 'json']);
    const form = await send('POST', '/webhooks', 'APPLICATION/X-WWW-FORM-URLENCODED; charset=UTF-8', 'url=https%3A%2F%2Fexample.com%2Fcase&name=form');
    expect([form.status, form.body.data?.name]).toEqual([200, 'form']);
    const latin = await send('POST', '/webhooks', 'Application/X-Www-Form-Urlencoded; CHARSET=ISO-8859-1', 'url=https%3A%2F%2Fexample.com%2Fcase&name=caf%E9');
    expect([latin.status, latin.body.data?.name]).toEqual([200, 'café']);
    // A form's values are text, as with the lower-case type: active=false is a boolean.
    const off = await send('PUT', `/webhooks/${form.body.data.id}`, ' application/X-WWW-form-urlencoded ', 'active=false');
    expect([off.status, off.body.data?.active]).toEqual([200, false]);
    const created = await ctx.api.post('/sources', { component_code: HTTP_SOURCE });
    const src = created.body.data.id as string;
    const endpoint = created.body.data.configured_props.http.endpoint_url as string;
    const nc = await connect(natsAdmin());
    try {
      const names = new Names(ctx.system.natsPrefix);
      const lastEvent = async (): Promise<{ bodyRaw: string; body: unknown }> => {
        const m = await (await nc.jetstreamManager()).streams.getMessage(names.invocationsStream, { last_by_subj: names.invocation(partitionOf(src, Number(ctx.system.env.PARTITIONS)), src) });
        const stored = decodeJson<{ event: { bodyRaw: string; body: unknown } } | { event: { bodyRaw: string; body: unknown } }[]>(m.data);
        return (Array.isArray(stored) ? stored[stored.length - 1] : stored).event;
      };
      for (const [type, body, parsed] of [
        ['APPLICATION/X-WWW-FORM-URLENCODED; charset=UTF-8', 'a=1&b=caf%C3%A9', { a: '1', b: 'café' }],
        ['Application/X-Www-Form-Urlencoded; Charset="ISO-8859-1"', 'b=caf%E9', { b: 'café' }],
        ['Application/JSON; Charset=UTF-8', '{"n":1}', { n: 1 }],
        ['APPLICATION/VND.API+JSON', '{"n":2}', { n: 2 }],
      ] as const) {
        const res = await fetch(endpoint, { method: 'POST', headers: { 'content-type': type }, body });
        expect([type, res.status]).toEqual([type, 200]);
        expect([type, (await lastEvent()).body]).toEqual([type, parsed]);
      }
    } finally {
      await nc.close();
    }
  });

  it('says which Content-Type a body of another type has and which it may have (it said "Unsupported Media Type")', async () => {
    const post = (type: string) => fetch(`${ctx.system.baseUrl}/webhooks`, { method: 'POST', headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': type }, body: '{"url":"https://example.com/type"}' });
    for (const type of ['application/xml', 'application/json-seq', 'application/jsonx', 'multipart/form-data; boundary=x', `application/${'x'.repeat(300)}`]) {
      const res = await post(type);
      const shown = type.length > 100 ? `${type.slice(0, 100)}…` : type;
      expect([type, res.status, await res.json()]).toEqual([
        type,
        415,
        { error: `Content-Type ${shown} is not accepted: send the request body as application/json (or a type ending in +json, text/plain, application/x-www-form-urlencoded)`, code: 'unsupported_media_type', details: { header: 'content-type' } },
      ]);
    }
    const { host } = new URL(ctx.system.origin);
    const untyped = await rawRequest(ctx.system.origin, `POST /v1/webhooks HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ctx.user.apiKey}\r\nContent-Length: 2\r\n\r\n{}`);
    expect([untyped.status, JSON.parse(untyped.body)]).toEqual([
      415,
      { error: 'the request body has no Content-Type: send it as application/json (or a type ending in +json, text/plain, application/x-www-form-urlencoded)', code: 'unsupported_media_type', details: { header: 'content-type' } },
    ]);
  });

  it("drops functions from what a prop's options() returns, as JSON does (they were answered as {\"$fn\":true,\"async\":false})", async () => {
    const code = (ret: string) => `export default { name: "fn-options", version: "0.0.1", props: { p: { type: "string", async options() { ${ret} } } }, async run() {} };`;
    const options = async (ret: string) => {
      const saved = await ctx.api.post('/components', { component_code: code(ret) });
      expect(saved.status).toBe(200);
      const res = await ctx.api.post(`/components/${saved.body.data.id}/props/p/options`, {});
      return [res.status, res.body];
    };
    expect(await options('return [() => 1, { label: "a", value: 1, extra: async () => 2 }, "b"];')).toEqual([200, { data: { options: [null, { label: 'a', value: 1 }, 'b'], context: null } }]);
    expect(await options('return { options: [{ label: "a", value: "a" }], context: { next() {}, page: 2 } };')).toEqual([200, { data: { options: [{ label: 'a', value: 'a' }], context: { page: 2 } } }]);
  });

  it('refuses a prop whose default is a function, and shows no function among its other fields (they were {"$fn":true,"async":false}, and a source of it was refused)', async () => {
    const save = (props: string) => ctx.api.post('/components', { component_code: `export default { name: "fn-default", version: "0.0.1", props: ${props}, async run() {} };` });
    for (const props of ['{ p: { type: "string", optional: true, default: () => "x" } }', '{ p: { type: "string[]", default: ["a", () => "b"] } }', '{ p: { type: "object", default: { a: { f() {} } } } }']) {
      const res = await save(props);
      expect([props, res.status, res.body]).toEqual([props, 400, { error: 'prop "p": default must be a value (JSON), not a function', code: 'invalid_component', details: { prop: 'p' } }]);
    }
    const saved = await save('{ p: { type: "string", optional: true, foo: () => 1, bar: { f() {}, n: 1, list: [() => 2, 3] } } }');
    expect([saved.status, saved.body.data?.configurable_props]).toEqual([200, [{ name: 'p', type: 'string', optional: true, bar: { n: 1, list: [null, 3] } }]]);
    expect((await ctx.api.post('/sources', { component_id: saved.body.data.id })).status).toBe(200);
  });

  it('reads JSON that starts with a byte order mark as the JSON after it, at the API and at an HTTP endpoint (the API said "not valid JSON", the endpoint kept the text)', async () => {
    const res = await fetch(`${ctx.system.baseUrl}/webhooks`, { method: 'POST', headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': 'application/json' }, body: Buffer.from('\ufeff{"url":"https://example.com/bom","name":"bom"}') });
    expect([res.status, ((await res.json()) as { data?: { name: string } }).data?.name]).toEqual([200, 'bom']);
    const created = await ctx.api.post('/sources', { component_code: HTTP_SOURCE });
    const src = created.body.data.id as string;
    const endpoint = created.body.data.configured_props.http.endpoint_url as string;
    // The request becomes an invocation in INVOCATIONS (no runner here): its event is read back from the stream.
    expect((await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.from('\ufeff{"n":1}') })).status).toBe(200);
    const nc = await connect(natsAdmin());
    try {
      const names = new Names(ctx.system.natsPrefix);
      const m = await (await nc.jetstreamManager()).streams.getMessage(names.invocationsStream, { last_by_subj: names.invocation(partitionOf(src, Number(ctx.system.env.PARTITIONS)), src) });
      const stored = decodeJson<{ event: { bodyRaw: string; body: unknown } } | { event: { bodyRaw: string; body: unknown } }[]>(m.data);
      const inv = Array.isArray(stored) ? stored[stored.length - 1] : stored;
      expect([inv.event.bodyRaw, inv.event.body]).toEqual(['\ufeff{"n":1}', { n: 1 }]);
    } finally {
      await nc.close();
    }
  });

  it('refuses every query parameter given twice alike, expand included (it said "expand must be a string")', async () => {
    const src = await sourceWithEvents();
    for (const path of [`/sources/${src}/event_summaries?expand=event&expand=summary`, `/sources/${src}/event_summaries?expand=event&expand=event`]) {
      const res = await ctx.api.get(path);
      expect([path, res.status, res.body]).toEqual([path, 400, { error: 'expand was given more than once', code: 'invalid_request', details: { in: 'query', field: 'expand' } }]);
    }
    const sse = await fetch(`${ctx.system.origin}/sse/dc/${src}/emits?expand=summary&expand=event`, { headers: { authorization: `Bearer ${ctx.user.apiKey}` }, signal: AbortSignal.timeout(5000) });
    expect([sse.status, await sse.json()]).toEqual([400, { error: 'expand was given more than once', code: 'invalid_request', details: { in: 'query', field: 'expand' } }]);
    expect((await ctx.api.get(`/sources/${src}/event_summaries?expand=event,summary`)).status).toBe(200);
  });

  it('refuses an event_name no event can have ($ other than $errors and $logs) on every event read, as POST /subscriptions does', async () => {
    const src = await sourceWithEvents();
    const workflow = await ctx.api.post('/workflows', { name: 'chan', trigger: { manual: {} }, steps: [{ name: 's1', code: 'export default defineComponent({ async run() { return 1 } })' }] });
    expect(workflow.status).toBe(200);
    const wf = workflow.body.data.id;
    const refused = { error: 'event_name may be empty (default channel), a custom channel name, $errors or $logs', code: 'invalid_request', details: { field: 'event_name', value: '$foo' } };
    const sub = await ctx.api.post('/subscriptions', { emitter_id: src, listener_id: wf, event_name: '$foo' });
    expect([sub.status, sub.body]).toEqual([400, refused]);
    for (const path of [`/sources/${src}/event_summaries`, `/workflows/${wf}/event_summaries`]) {
      const res = await ctx.api.get(`${path}?event_name=%24foo`);
      expect([path, res.status, res.body]).toEqual([path, 400, refused]);
    }
    for (const name of ['%24errors', '%24logs', '', 'custom']) expect((await ctx.api.get(`/sources/${src}/event_summaries?event_name=${name}`)).status).toBe(200);
    expect((await ctx.api.get(`/sources/${src}/event_summaries?event_name=`)).body.data).toHaveLength(5);
  });

  it('answers HEAD of an event stream with its head at once, rather than holding the request open', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    const workflow = await ctx.api.post('/workflows', { name: 'head', trigger: { manual: {} }, steps: [{ name: 's1', code: 'export default defineComponent({ async run() { return 1 } })' }] });
    expect(workflow.status).toBe(200);
    for (const path of [`/sse/dc/${src}/emits`, `/sse/dc/${src}/observations`, `/sse/p/${workflow.body.data.id}/sse`, `/sse/p/${workflow.body.data.id}/emits`]) {
      const res = await fetch(`${ctx.system.origin}${path}`, { method: 'HEAD', headers: { authorization: `Bearer ${ctx.user.apiKey}` }, signal: AbortSignal.timeout(5000) });
      expect([path, res.status, res.headers.get('content-type')]).toEqual([path, 200, 'text/event-stream; charset=utf-8']);
      expect(await res.text()).toBe('');
    }
    const unknown = await fetch(`${ctx.system.origin}/sse/dc/dc_nope/emits`, { method: 'HEAD', headers: { authorization: `Bearer ${ctx.user.apiKey}` }, signal: AbortSignal.timeout(5000) });
    expect(unknown.status).toBe(404);
    expect((await fetch(`${ctx.system.origin}/sse/dc/${src}/emits`, { method: 'HEAD', signal: AbortSignal.timeout(5000) })).status).toBe(401);
  });

  it('answers an HTTP/1.1 request without Host, and CONNECT, in the error shape (Node answered with no body, or not at all)', async () => {
    for (const path of ['/v1/users/me', '/e/en_nope']) {
      const noHost = await rawRequest(ctx.system.origin, `GET ${path} HTTP/1.1\r\nAuthorization: Bearer ${ctx.user.apiKey}\r\n\r\n`);
      expect([path, noHost.status]).toEqual([path, 400]);
      expect(JSON.parse(noHost.body)).toEqual({ error: 'the Host header is required', code: 'invalid_request', details: { header: 'host' } });
    }
    // HTTP/1.0 has no Host requirement.
    expect((await rawRequest(ctx.system.origin, `GET /v1/users/me HTTP/1.0\r\nAuthorization: Bearer ${ctx.user.apiKey}\r\n\r\n`)).status).toBe(200);
    const connect = await rawRequest(ctx.system.origin, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(connect.status).toBe(405);
    expectErrorBody(JSON.parse(connect.body), 'method_not_allowed');
  });

  it('refuses a request target with a fragment (#…), which was read as the query string', async () => {
    for (const target of ['/v1/users/me#x', '/v1/users/me/sources#limit=1', '/v1/users/me?limit=1#frag']) {
      const res = await rawRequest(ctx.system.origin, `GET ${target} HTTP/1.1\r\nHost: a.example\r\nAuthorization: Bearer ${ctx.user.apiKey}\r\n\r\n`);
      expect([target, res.status]).toEqual([target, 400]);
      expect(JSON.parse(res.body)).toEqual({ error: 'the request target contains a fragment (#…), which is never sent to a server: leave it out', code: 'invalid_request', details: { reason: 'fragment' } });
    }
  });

  it('refuses two Host or Content-Type headers (one was picked), and answers an Expect it cannot meet in the error shape (417 had no body)', async () => {
    const created = await ctx.api.post('/sources', { component_code: HTTP_SOURCE });
    const endpoint = new URL(created.body.data.configured_props.http.endpoint_url as string).pathname;
    // Known to the api's endpoint lookup, so that a plain POST there takes its fast path.
    expect((await fetch(`${ctx.system.origin}${endpoint}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' })).status).toBe(200);
    const requests = [
      `GET /v1/users/me HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\nAuthorization: Bearer ${ctx.user.apiKey}\r\n\r\n`,
      `POST ${endpoint} HTTP/1.1\r\nHost: a.example\r\nhost: b.example\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{"n":2}`,
      `GET /e/en_nope HTTP/1.1\r\nHost: a.example\r\nHost: a.example\r\n\r\n`,
    ];
    for (const request of requests) {
      const res = await rawRequest(ctx.system.origin, request);
      expect([request.split('\r\n')[0], res.status]).toEqual([request.split('\r\n')[0], 400]);
      expect(JSON.parse(res.body)).toEqual({ error: 'send one Host header, not several', code: 'invalid_request', details: { header: 'host' } });
    }

    // Two Content-Type headers on an API route: Node kept the first (`application/json` here, of a body sent as a form).
    const types = await rawRequest(ctx.system.origin, `POST /v1/webhooks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ctx.user.apiKey}\r\nContent-Type: application/json\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 38\r\n\r\n{"url":"https://two-types.example/"}\r\n`);
    expect([types.status, JSON.parse(types.body)]).toEqual([400, { error: 'send one Content-Type header, not several', code: 'invalid_request', details: { header: 'content-type' } }]);
    expect((await ctx.api.get('/users/me/webhooks?limit=100')).body.data.filter((w: { url: string }) => w.url.includes('two-types'))).toEqual([]);

    const expectation = await rawRequest(ctx.system.origin, `POST /v1/webhooks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ctx.user.apiKey}\r\nContent-Type: application/json\r\nExpect: something-else\r\nContent-Length: 2\r\n\r\n{}`);
    expect(expectation.status).toBe(417);
    expect(JSON.parse(expectation.body)).toEqual({ error: 'the Expect header asks for something-else: only 100-continue is supported', code: 'expectation_failed', details: { header: 'expect' } });
    // 100-continue is met: the body is asked for and read.
    const cont = await rawRequest(ctx.system.origin, `POST /v1/webhooks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ctx.user.apiKey}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}`);
    expect(cont.headers).toMatch(/^HTTP\/1\.1 100 Continue/);
    expect(JSON.parse(cont.body.slice(cont.body.indexOf('{')))).toMatchObject({ code: 'invalid_request', details: { fields: ['url'] } });
  });

  it('refuses an emitter_id that is a glob other than dc_* or p_* with 400 naming the field (it answered 404 source not found)', async () => {
    const webhook = (await ctx.api.post('/webhooks', { url: 'https://example.com/h' })).body.data.id as string;
    const refused = (value: string) => ({ error: 'emitter_id must be a source id (dc_…), a workflow id (p_…), or a glob dc_* or p_*', code: 'invalid_request', details: { field: 'emitter_id', value } });
    for (const e of ['dc_*x', 'p_**', 'dc_a*b', '*dc_x']) {
      const inBody = await ctx.api.post('/subscriptions', { emitter_id: e, listener_id: webhook });
      expect([e, inBody.status, inBody.body]).toEqual([e, 400, refused(e)]);
      const inQuery = await ctx.api.post(`/subscriptions?emitter_id=${encodeURIComponent(e)}&listener_id=${webhook}`);
      expect([e, inQuery.status, inQuery.body]).toEqual([e, 400, refused(e)]);
    }
    // DELETE reads the same parameters: what no subscription can name is malformed there too, not "not found".
    for (const e of ['dc_*x', 'p_**', 'x*', 'wh_1']) {
      const del = await ctx.api.del(`/subscriptions?emitter_id=${encodeURIComponent(e)}&listener_id=${webhook}&event_name=`);
      expect([e, del.status, del.body]).toEqual([e, 400, refused(e)]);
    }
    const globListener = await ctx.api.del(`/subscriptions?emitter_id=dc_*&listener_id=wh_*&event_name=`);
    expect([globListener.status, globListener.body.details]).toEqual([400, { field: 'listener_id', value: 'wh_*' }]);
    // The two globs, and ids of the right kind, are what they were.
    expect((await ctx.api.post('/subscriptions', { emitter_id: 'dc_*', listener_id: webhook })).status).toBe(200);
    expect((await ctx.api.del(`/subscriptions?emitter_id=dc_*&listener_id=${webhook}&event_name=`)).status).toBe(204);
    expect((await ctx.api.del(`/subscriptions?emitter_id=p_*&listener_id=${webhook}&event_name=`)).status).toBe(404);
    expect((await ctx.api.del(`/subscriptions?emitter_id=dc_nope&listener_id=${webhook}&event_name=`)).status).toBe(404);
  });

  it('answers an auto-subscription event_name other than $errors or $logs alike from the query, a form or a JSON body', async () => {
    const webhook = (await ctx.api.post('/webhooks', { url: 'https://example.com/h' })).body.data.id as string;
    const refused = (where: 'query' | 'body') => ({ error: 'event_name must be one of "$errors", "$logs"', code: 'invalid_request', details: { in: where, field: 'event_name', allowed: ['$errors', '$logs'] } });
    const json = await ctx.api.post('/auto_subscriptions', { event_name: '$foo', listener_id: webhook });
    expect([json.status, json.body]).toEqual([400, refused('body')]);
    const query = await ctx.api.post(`/auto_subscriptions?event_name=%24foo&listener_id=${webhook}`);
    expect([query.status, query.body]).toEqual([400, refused('query')]);
    const form = await fetch(`${ctx.system.baseUrl}/auto_subscriptions`, { method: 'POST', headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': 'application/x-www-form-urlencoded' }, body: `event_name=errors&listener_id=${webhook}` });
    expect([form.status, await form.json()]).toEqual([400, refused('body')]);
    expect((await ctx.api.post(`/auto_subscriptions?event_name=%24errors&listener_id=${webhook}`)).status).toBe(200);
  });

  it('says a malformed start_id or end_id is not an event id, without showing a regular expression', async () => {
    const src = await sourceWithEvents();
    for (const field of ['start_id', 'end_id']) {
      for (const id of ['bad', '1-2-3', '17000000000000000-0']) {
        const expected = { error: `${field} must be an event id like 1700000000000-0`, code: 'invalid_request', details: { in: 'query', field } };
        const query = await ctx.api.del(`/sources/${src}/events?${field}=${id}`);
        expect([field, id, query.status, query.body]).toEqual([field, id, 400, expected]);
        const body = await fetch(`${ctx.system.baseUrl}/sources/${src}/events`, { method: 'DELETE', headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ [field]: id }) });
        expect([field, id, body.status, await body.json()]).toEqual([field, id, 400, { ...expected, details: { in: 'body', field } }]);
      }
    }
    expect(await ids(src)).toHaveLength(5);
    // A path parameter declared with a pattern reads alike.
    const app = await ctx.api.post('/apps/Git-Hub/hook_events', { event_name: 'push', event: {} });
    expect([app.status, app.body]).toEqual([400, { error: 'app must be an app slug of lowercase letters, digits and _ (github, google_sheets)', code: 'invalid_request', details: { in: 'path', field: 'app' } }]);
  });

  it('says a malformed event_id of POST /workflows/{id}/replay is not an event id, as start_id and end_id are (it answered 404)', async () => {
    const created = await ctx.api.post('/workflows', { name: 'replayed', trigger: { manual: {} }, steps: [{ name: 'a', code: 'export default defineComponent({ async run() { return 1; } });' }] });
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    const expected = { error: 'event_id must be an event id like 1700000000000-0', code: 'invalid_request', details: { in: 'body', field: 'event_id' } };
    for (const eventId of ['bad', '1-2-3', '17000000000000000-0', '1-0 ', '-1-0', '1.5-0', 'x'.repeat(64)]) {
      const res = await ctx.api.post(`/workflows/${id}/replay`, { event_id: eventId });
      expect([eventId, res.status, res.body]).toEqual([eventId, 400, expected]);
    }
    // The same answer whichever workflow it names: the body is checked first.
    const other = await ctx.api.post('/workflows/p_nope/replay', { event_id: 'bad' });
    expect([other.status, other.body]).toEqual([400, expected]);
    // An id of the right form that is not one of its $errors events is still not found, and one that is replays.
    expect((await ctx.api.post(`/workflows/${id}/replay`, { event_id: '1-0' })).status).toBe(404);
    await sql(ctx.system, `insert into event_summaries (emitter_id, id, id_ms, id_seq, name, channel_class, owner_id, emit_id, summary, event, meta, size_bytes, indexed_at_ms)
      values ($1, '1700000000001-0', 1700000000001, 0, '$errors', '$errors', $2, 'emit-err', '', $3, '{}', 10, 1700000000001)`, [id, ctx.user.id, JSON.stringify({ original_event: { n: 1 } })]);
    const replayed = await ctx.api.post(`/workflows/${id}/replay`, { event_id: '1700000000001-0' });
    expect([replayed.status, replayed.body]).toEqual([202, { data: { invocation_id: expect.any(String) } }]);
  });

  it('answers a request line of another HTTP version than 1.0 or 1.1 (HTTP/2.0 as text, HTTP/0.9) in the error shape, not as HTTP/1.1 without Host', async () => {
    const created = await ctx.api.post('/sources', { component_code: HTTP_SOURCE });
    const endpoint = new URL(created.body.data.configured_props.http.endpoint_url as string).pathname;
    // Known to the api's endpoint lookup, so that a plain POST there takes its fast path.
    expect((await fetch(`${ctx.system.origin}${endpoint}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' })).status).toBe(200);
    for (const version of ['2.0', '0.9']) {
      const requests = [
        `GET /v1/users/me HTTP/${version}\r\nAuthorization: Bearer ${ctx.user.apiKey}\r\n\r\n`,
        `GET /v1/users/me HTTP/${version}\r\nHost: x\r\nAuthorization: Bearer ${ctx.user.apiKey}\r\n\r\n`,
        `POST ${endpoint} HTTP/${version}\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{"n":2}`,
        `GET /e/en_nope HTTP/${version}\r\n\r\n`,
      ];
      for (const request of requests) {
        const res = await rawRequest(ctx.system.origin, request);
        expect([request.split('\r\n')[0], res.status, JSON.parse(res.body)]).toEqual([
          request.split('\r\n')[0],
          400,
          { error: `HTTP/${version} is not supported: send HTTP/1.1 (or HTTP/1.0)`, code: 'invalid_request', details: { http_version: version } },
        ]);
      }
    }
    expect((await rawRequest(ctx.system.origin, `GET /v1/users/me HTTP/1.0\r\nAuthorization: Bearer ${ctx.user.apiKey}\r\n\r\n`)).status).toBe(200);
  });

  it('answers 400, not 500, to a JSON body at an HTTP endpoint nested too deep to carry, and takes 1,000 levels', async () => {
    const created = await ctx.api.post('/sources', { component_code: HTTP_SOURCE });
    const url: string = created.body.data.configured_props.http.endpoint_url;
    const post = (body: string, type = 'application/json') => fetch(url, { method: 'POST', headers: { 'content-type': type }, body });
    const deep = await post(nested(5000));
    expect(deep.status).toBe(400);
    expect(await deep.json()).toEqual({ error: 'the request body is JSON nested deeper than 1000 levels', code: 'invalid_request', details: { max_depth: 1000 } });
    expect((await post(`{"a":${nested(20_000)}}`, 'application/vnd.api+json; charset=utf-8')).status).toBe(400);
    expect((await post(nested(1000))).status).toBe(200);
    // Not JSON by its type: kept as the raw string, as always; brackets inside a JSON string do not count.
    expect((await post(nested(5000), 'text/plain')).status).toBe(200);
    expect((await post(JSON.stringify({ s: '['.repeat(5000) }))).status).toBe(200);
  });

  it('declares the {channel} of a workflow\'s $errors list as the one value it takes, and answers 400 naming it for any other (it was a free string answered 404 no such route)', async () => {
    const doc = (await (await fetch(`${ctx.system.baseUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, { parameters?: { name: string; in: string; schema: Record<string, unknown> }[] }>> };
    const channel = doc.paths['/v1/workflows/{id}/{channel}/event_summaries'].get.parameters?.find((p) => p.in === 'path' && p.name === 'channel');
    expect(channel?.schema).toMatchObject({ const: '$errors' });
    const wf = (await ctx.api.post('/workflows', { name: 'channel-param', trigger: { manual: {} }, steps: [{ name: 's1', code: 'export default defineComponent({ async run() { return 1 } })' }] })).body.data.id as string;
    for (const name of ['$errors', '%24errors']) expect([name, (await ctx.api.get(`/workflows/${wf}/${name}/event_summaries`)).status]).toEqual([name, 200]);
    const refused = { error: 'channel must be one of "$errors"', code: 'invalid_request', details: { in: 'path', field: 'channel', allowed: ['$errors'] } };
    for (const name of ['$logs', '%24logs', 'errors', '%24ERRORS', 'x'.repeat(300)]) {
      for (const id of [wf, 'p_unknown']) {
        const res = await ctx.api.get(`/workflows/${id}/${name}/event_summaries`);
        expect([name.slice(0, 20), id, res.status, res.body]).toEqual([name.slice(0, 20), id, 400, refused]);
      }
    }
  });

  it('answers 400 naming the parameter for a path parameter outside the form the document declares, on every route', async () => {
    const doc = (await (await fetch(`${ctx.system.baseUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, { parameters?: { name: string; in: string; schema: Record<string, unknown> }[] }>> };
    const declared: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const p of (op.parameters ?? []).filter((x) => x.in === 'path')) {
          // An id, key or name is looked up: any text is taken, one that names nothing is a 404.
          if (!('const' in p.schema || 'enum' in p.schema || 'pattern' in p.schema)) {
            expect([path, p.name]).toEqual([path, expect.stringMatching(/^(id|org_id|keyOrId|key|prop)$/)]);
            continue;
          }
          declared.push(`${method} ${path} ${p.name}`);
          const filled = path.replace(/\{([^}]+)\}/g, (_m, n: string) => (n === p.name ? 'NOT%20ALLOWED' : n === 'id' ? 'p_unknown' : 'x'));
          const res = await fetch(`${ctx.system.origin}${filled}`, { method: method.toUpperCase(), headers: { authorization: `Bearer ${ctx.user.apiKey}`, ...(method === 'get' ? {} : { 'content-type': 'application/json' }) }, body: method === 'get' ? undefined : '{}' });
          expect([method, path, res.status, await res.json()]).toEqual([method, path, 400, expect.objectContaining({ code: 'invalid_request', details: expect.objectContaining({ in: 'path', field: p.name }) })]);
        }
      }
    }
    expect(declared).toEqual(expect.arrayContaining(['get /v1/workflows/{id}/{channel}/event_summaries channel', 'post /v1/apps/{app}/hook_events app']));
  });
});
