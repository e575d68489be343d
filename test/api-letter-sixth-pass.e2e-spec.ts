import { apiOnlySystem } from './support/system-with-user';
import { insertSource } from './events.helpers';

/** What a hostile-client sweep of /v1 found answered otherwise than docs/api.md says. */
describe('API to the letter, sixth pass: docs/api.md against the running service', () => {
  const ctx = apiOnlySystem();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const send = async (method: string, path: string, body?: string, type = 'application/json'): Promise<{ status: number; body: any }> => {
    const headers: Record<string, string> = { authorization: `Bearer ${ctx.user.apiKey}`, ...(body === undefined ? {} : { 'content-type': type }) };
    const res = await fetch(`${ctx.system.baseUrl}${path}`, { method, headers, body });
    return { status: res.status, body: await res.json() };
  };

  it('says a webhook url given empty is missing, in the shape of an absent one (it was details: { field } alone), and a blank one is not a URL', async () => {
    const missing = (where: 'query' | 'body') => ({ error: 'url is required', code: 'invalid_request', details: { in: where, fields: ['url'] } });
    expect(await send('POST', '/webhooks')).toEqual({ status: 400, body: missing('query') });
    expect(await send('POST', '/webhooks?url=')).toEqual({ status: 400, body: missing('query') });
    expect(await send('POST', '/webhooks', '{"url":""}')).toEqual({ status: 400, body: missing('body') });
    expect(await send('POST', '/webhooks', 'url=&name=x', 'application/x-www-form-urlencoded')).toEqual({ status: 400, body: missing('body') });
    const notUrl = { error: 'url must be an absolute http or https URL with a hostname, e.g. https://example.com/hook', code: 'invalid_request', details: { field: 'url', value: '  ' } };
    expect(await send('POST', '/webhooks?url=%20%20')).toEqual({ status: 400, body: notUrl });
    // On PUT a url is not required: an empty one is not a URL (it said "url is required").
    const made = await ctx.api.post('/webhooks', { url: 'https://example.com/sixth' });
    expect(await send('PUT', `/webhooks/${made.body.data.id}`, '{"url":""}')).toEqual({ status: 400, body: { ...notUrl, details: { field: 'url', value: '' } } });
    expect((await ctx.api.get('/users/me/webhooks')).body.data.map((w: { url: string }) => w.url)).toEqual(['https://example.com/sixth']);
  });

  it('says where a start_id after its end_id was given: in the body, details.in is body (it said query)', async () => {
    const source = await insertSource(ctx.system, ctx.user.id);
    const after = (where: 'query' | 'body') => ({
      error: 'start_id must not be after end_id',
      code: 'invalid_request',
      details: { in: where, fields: ['start_id', 'end_id'], start_id: '2-0', end_id: '1-0' },
    });
    expect(await send('DELETE', `/sources/${source}/events?start_id=2-0&end_id=1-0`)).toEqual({ status: 400, body: after('query') });
    expect(await send('DELETE', `/sources/${source}/events`, '{"start_id":"2-0","end_id":"1-0"}')).toEqual({ status: 400, body: after('body') });
    expect(await send('DELETE', `/sources/${source}/events`, 'start_id=2-0&end_id=1-0', 'application/x-www-form-urlencoded')).toEqual({ status: 400, body: after('body') });
  });
});
