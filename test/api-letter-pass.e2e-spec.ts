import { gzipSync } from 'node:zlib';
import { apiOnlySystem } from './support/system-with-user';
import { HTTP_SOURCE } from './support/components';
import { fillPath, Json, operationsOf } from './support/openapi-requests';
import { rawRequest } from './support/raw-http';
import { client, createUser } from './support/accounts';

/** What an acceptance pass of the REST API against docs/api.md and docs/events.md found answered otherwise. */
describe('API to the letter of its docs: cursors, required parameters, content codings', () => {
  // The body limit is twice COMPONENT_MAX_BYTES plus 1 MiB: 1.125 MiB here.
  const ctx = apiOnlySystem({ COMPONENT_MAX_BYTES: '65536' });

  it("refuses another list's cursor, naming the parameter in details.field as every bad value is named", async () => {
    const component = (await ctx.api.post('/components', { component_code: HTTP_SOURCE })).body.data.id as string;
    expect((await ctx.api.post('/sources', { component_id: component })).status).toBe(200);
    expect((await ctx.api.post('/webhooks', { url: 'https://example.com/hook' })).status).toBe(200);
    const sourceCursor = (await ctx.api.get('/users/me/sources')).body.page_info.end_cursor as string;
    const webhookCursor = (await ctx.api.get('/users/me/webhooks')).body.page_info.end_cursor as string;

    // Each list takes its own cursors.
    expect((await ctx.api.get(`/users/me/sources?after=${sourceCursor}`)).body).toMatchObject({ page_info: { count: 0 }, data: [] });
    expect((await ctx.api.get(`/users/me/webhooks?before=${webhookCursor}`)).status).toBe(200);

    for (const [path, param, cursor] of [
      ['/users/me/sources', 'after', webhookCursor],
      ['/users/me/sources', 'before', webhookCursor],
      ['/users/me/webhooks', 'after', sourceCursor],
      ['/users/me/workflows', 'after', sourceCursor],
    ]) {
      const res = await ctx.api.get(`${path}?${param}=${cursor}`);
      expect([path, res.status, res.body]).toEqual([path, 400, { error: `${param} is not a valid cursor`, code: 'invalid_request', details: { in: 'query', field: param } }]);
    }
    const garbage = await ctx.api.get('/users/me/sources?after=garbage');
    expect(garbage.body).toEqual({ error: 'after is not a valid cursor', code: 'invalid_request', details: { in: 'query', field: 'after' } });
    const both = await ctx.api.get(`/users/me/sources?after=${sourceCursor}&before=${sourceCursor}`);
    expect([both.status, both.body]).toEqual([400, { error: 'pass either after or before, not both', code: 'invalid_request', details: { in: 'query', fields: ['after', 'before'] } }]);
  });

  it("refuses a cursor of another account's list and one made by hand: a cursor is only ever one this list returned", async () => {
    const component = (await ctx.api.post('/components', { component_code: HTTP_SOURCE })).body.data.id as string;
    expect((await ctx.api.post('/sources', { component_id: component, name: 'cursor-mine' })).status).toBe(200);
    const other = client(ctx.system, createUser(ctx.system).apiKey);
    const otherComponent = (await other.post('/components', { component_code: HTTP_SOURCE })).body.data.id as string;
    for (const name of ['theirs-1', 'theirs-2']) expect((await other.post('/sources', { component_id: otherComponent, name })).status).toBe(200);
    const theirs = (await other.get('/users/me/sources?limit=1')).body.page_info.end_cursor as string;
    // Their cursor pages their list, not anyone else's.
    expect((await other.get(`/users/me/sources?after=${theirs}`)).body.data.map((s: { name: string }) => s.name)).toEqual(['theirs-1']);
    const mine = (await ctx.api.get('/users/me/sources?limit=1')).body.page_info.end_cursor as string;
    const [position] = mine.split('.');
    const byHand = [
      theirs,
      // The position alone (the form of cursors before they were signed), and under a made-up signature.
      position,
      `${position}.${'A'.repeat(22)}`,
      // A position of one's choosing, under a signature the list gave another.
      `${Buffer.from(JSON.stringify([Date.now() + 60_000, 'dc_zzzz'])).toString('base64url')}.${mine.split('.')[1]}`,
    ];
    for (const cursor of byHand) {
      const res = await ctx.api.get(`/users/me/sources?before=${cursor}`);
      expect([cursor, res.status, res.body]).toEqual([cursor, 400, { error: 'before is not a valid cursor', code: 'invalid_request', details: { in: 'query', field: 'before' } }]);
    }
  });

  it('answers a compressed body 415 naming Content-Encoding (gzip was read as "not valid UTF-8", a mislabelled plain body was taken)', async () => {
    const json = JSON.stringify({ url: 'https://example.com/compressed' });
    const post = (body: Buffer | string, encoding: string) =>
      fetch(`${ctx.system.baseUrl}/webhooks`, { method: 'POST', headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': 'application/json', 'content-encoding': encoding }, body });
    for (const [body, encoding] of [[gzipSync(json), 'gzip'], [json, 'gzip'], [json, 'br'], [json, 'identity, gzip']] as const) {
      const res = await post(body, encoding);
      const error = `Content-Encoding ${encoding} is not accepted: send the request body uncompressed`;
      expect([encoding, res.status, await res.json()]).toEqual([encoding, 415, { error, code: 'unsupported_media_type', details: { header: 'content-encoding' } }]);
    }
    expect((await ctx.api.get('/users/me/webhooks?limit=100')).body.data.filter((w: { url: string }) => w.url.endsWith('/compressed'))).toEqual([]);
    const identity = await post(json, 'identity');
    expect(identity.status).toBe(200);
  });

  it('answers a body in a transfer coding other than chunked 415 naming Transfer-Encoding (it was read as sent, not decoded)', async () => {
    const json = JSON.stringify({ url: 'https://example.com/transfer-coded' });
    const chunked = (body: Buffer) => `${body.length.toString(16)}\r\n${body.toString('latin1')}\r\n0\r\n\r\n`;
    const post = (te: string, body: Buffer) =>
      rawRequest(ctx.system.origin, `POST /v1/webhooks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ctx.user.apiKey}\r\nContent-Type: application/json\r\nTransfer-Encoding: ${te}\r\n\r\n${chunked(body)}`);
    // (rawRequest writes text: a plain body labelled gzip shows it as well as gzip bytes would, and it was created.)
    for (const [te, body] of [['gzip, chunked', Buffer.from(json)], ['deflate, chunked', Buffer.from(json)], ['x-custom, chunked', Buffer.from(json)]] as const) {
      const res = await post(te, body);
      const error = `Transfer-Encoding ${te} is not accepted: send the request body with no transfer coding but chunked`;
      expect([te, res.status, JSON.parse(res.body)]).toEqual([te, 415, { error, code: 'unsupported_media_type', details: { header: 'transfer-encoding' } }]);
    }
    expect((await ctx.api.get('/users/me/webhooks?limit=100')).body.data.filter((w: { url: string }) => w.url.endsWith('/transfer-coded'))).toEqual([]);
    const plain = await post('chunked', Buffer.from(json));
    expect(plain.status).toBe(200);
  });

  it('declares 413 and 415 on every operation that reads a request body, as each answers them', async () => {
    const doc = (await (await fetch(`${ctx.system.origin}/v1/openapi.json`)).json()) as Json;
    const withBody = operationsOf(doc).filter((op) => op.method !== 'GET');
    expect(withBody.length).toBeGreaterThan(15);
    const send = (method: string, path: string, type: string, body: string) =>
      fetch(ctx.system.origin + fillPath(path, {}), { method, headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': type }, body });
    const tooLarge = 'x'.repeat(2 * 1024 * 1024);
    for (const op of withBody) {
      const xml = await send(op.method, op.path, 'application/xml', '<x/>');
      const large = await send(op.method, op.path, 'text/plain', tooLarge);
      expect([op.operationId, xml.status, large.status]).toEqual([op.operationId, 415, 413]);
      expect([op.operationId, op.statuses.includes(413), op.statuses.includes(415)]).toEqual([op.operationId, true, true]);
    }
  });

  it('says a required parameter given empty is missing in the shape of an absent one (details.in, details.fields)', async () => {
    const missing = (fields: string[], where: 'query' | 'body') => ({
      error: `${fields.join(', ')} ${fields.length > 1 ? 'are' : 'is'} required`,
      code: 'invalid_request',
      details: { in: where, fields },
    });
    const both = await ctx.api.post('/subscriptions?emitter_id=&listener_id=');
    expect([both.status, both.body]).toEqual([400, missing(['emitter_id', 'listener_id'], 'query')]);
    const one = await ctx.api.del('/subscriptions?emitter_id=dc_x&listener_id=&event_name=');
    expect([one.status, one.body]).toEqual([400, missing(['listener_id'], 'query')]);
    const auto = await ctx.api.post('/auto_subscriptions?event_name=&listener_id=wh_x');
    expect([auto.status, auto.body]).toEqual([400, missing(['event_name'], 'query')]);
    const inBody = await ctx.api.post('/subscriptions', { emitter_id: '', listener_id: 'wh_x' });
    expect([inBody.status, inBody.body]).toEqual([400, missing(['emitter_id'], 'body')]);
    // Absent, as the route's schema answers it.
    const absent = await ctx.api.post('/auto_subscriptions?listener_id=wh_x');
    expect([absent.status, absent.body]).toEqual([400, missing(['event_name'], 'query')]);
  });

  it('refuses a number too large for a double (1e400 was read as Infinity and stored as null)', async () => {
    const code = 'module.exports = { name: "obj", version: "1", props: { o: { type: "object", optional: true } }, async run() {} };';
    const component = (await ctx.api.post('/components', { component_code: code })).body.data.id as string;
    const send = (body: string) => fetch(`${ctx.system.baseUrl}/sources`, { method: 'POST', headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': 'application/json' }, body });
    const res = await send(`{"component_id":"${component}","configured_props":{"o":{"list":[1,-1e400]}}}`);
    expect([res.status, await res.json()]).toEqual([
      400,
      { error: 'the request body holds a number too large to be represented at configured_props.o.list[1]', code: 'invalid_request', details: { reason: 'number_out_of_range', path: 'configured_props.o.list[1]' } },
    ]);
    const digits = await send(`{"component_id":"${component}","configured_props":{"o":{"n":${'9'.repeat(400)}}}}`);
    expect(digits.status).toBe(400);
    const inQuery = await ctx.api.post(`/sources?component_id=${component}&configured_props=${encodeURIComponent('{"o":{"n":1e999}}')}`);
    // Its path from the top, as in a JSON body (it said o.n).
    expect([inQuery.status, inQuery.body]).toEqual([
      400,
      { error: 'configured_props holds a number too large to be represented at configured_props.o.n', code: 'invalid_request', details: { reason: 'number_out_of_range', path: 'configured_props.o.n' } },
    ]);
    const notObject = await ctx.api.post(`/sources?component_id=${component}&configured_props=${encodeURIComponent('[1]')}`);
    expect([notObject.status, notObject.body.details]).toEqual([400, { in: 'query', field: 'configured_props', errors: [{ field: 'configured_props', rule: 'type', message: 'must be object' }] }]);
    // Large numbers a double holds are kept.
    const kept = await send(`{"component_id":"${component}","configured_props":{"o":{"n":1e300}}}`);
    expect([kept.status, ((await kept.json()) as { data: { configured_props: unknown } }).data.configured_props]).toEqual([200, { o: { n: 1e300 } }]);
  });

  it('says where a missing component was looked for (details.in), as every missing field', async () => {
    const none = (fields: string[], where: 'query' | 'body') => ({
      error: `${fields.slice(0, -1).join(', ')} or ${fields[fields.length - 1]} is required`,
      code: 'invalid_request',
      details: { in: where, fields },
    });
    const components = ['component_code', 'component_url'];
    const sources = ['component_id', 'component_code', 'component_url'];
    expect((await ctx.api.post('/components')).body).toEqual(none(components, 'query'));
    expect((await ctx.api.post('/components', {})).body).toEqual(none(components, 'body'));
    expect((await ctx.api.post('/components?component_code=')).body).toEqual(none(components, 'query'));
    expect((await ctx.api.post('/sources', { component_id: '', name: 'x' })).body).toEqual(none(sources, 'body'));
    expect((await ctx.api.post('/sources?name=x')).body).toEqual(none(sources, 'query'));
    const source = (await ctx.api.post('/sources', { component_code: HTTP_SOURCE })).body.data.id as string;
    expect((await ctx.api.put(`/sources/${source}`, { active: false })).body).toEqual(none(sources, 'body'));
    expect((await ctx.api.put(`/sources/${source}?active=false`)).body).toEqual(none(sources, 'query'));
  });
});
