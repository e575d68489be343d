import { apiOnlySystem } from './support/system-with-user';

const CODE = 'module.exports = { name: "Form", version: "0.0.1", props: { http: "$.interface.http" }, async run() {} };';

/**
 * docs/api.md: a form body is text read as the query string is, and a body that is not UTF-8 (JSON, text or form,
 * its %XX escapes bytes in its charset) is a 400. A form's broken escape (`%zz`) was kept as written and an escape
 * that is not UTF-8 (`%ff`) stored as U+FFFD, where the same query string is refused.
 */
describe('form bodies: percent-escapes read as the query string reads them', () => {
  const ctx = apiOnlySystem();
  const form = async (method: string, path: string, body: string, type = 'application/x-www-form-urlencoded') => {
    const res = await fetch(`${ctx.system.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': type }, body });
    return { status: res.status, json: async () => (await res.json()) as { error?: string; details?: unknown; data: { name: string } } };
  };

  it('refuses an escape that is not % and two hex digits, and escapes that are not UTF-8, and stores nothing', async () => {
    const src = await ctx.api.post('/sources', { component_code: CODE, name: 'before' });
    expect(src.status).toBe(200);
    const { id, component_id: componentId } = src.body.data as { id: string; component_id: string };
    for (const value of ['x%zz', 'x%2', 'x%']) {
      const res = await form('PUT', `/sources/${id}`, `component_id=${componentId}&name=${value}`);
      expect([value, res.status, await res.json()]).toEqual([value, 400, { error: 'the request body is not a valid form (bad percent-encoding)', code: 'invalid_request', details: { reason: 'bad_percent_encoding' } }]);
    }
    for (const value of ['x%ff', 'x%C3', 'a%E2%82', '%C3x%A9']) {
      const res = await form('PUT', `/sources/${id}`, `component_id=${componentId}&name=${value}`);
      expect([value, res.status, await res.json()]).toEqual([value, 400, { error: 'the request body is not valid UTF-8', code: 'invalid_request', details: { reason: 'invalid_utf8' } }]);
    }
    const hook = await form('POST', '/webhooks', 'url=https%3A%2F%2Fexample.com%2Fhook&name=%ff');
    expect([hook.status, (await hook.json()).details]).toEqual([400, { reason: 'invalid_utf8' }]);
    expect((await ctx.api.get(`/sources/${id}`)).body.data.name).toBe('before');
    expect((await ctx.api.get('/users/me/webhooks')).body.page_info.total_count).toBe(0);
  });

  it('reads well-formed escapes as before: UTF-8, and in a form of another charset, bytes in it', async () => {
    const src = await ctx.api.post('/sources', { component_code: CODE });
    const { id, component_id: componentId } = src.body.data as { id: string; component_id: string };
    const utf8 = await form('PUT', `/sources/${id}`, `component_id=${componentId}&name=caf%C3%A9+%E2%82%AC`);
    expect([utf8.status, (await utf8.json()).data.name]).toEqual([200, 'café €']);
    const latin = await form('PUT', `/sources/${id}`, `component_id=${componentId}&name=caf%E9+%80`, 'application/x-www-form-urlencoded; charset=windows-1252');
    expect([latin.status, (await latin.json()).data.name]).toEqual([200, 'café €']);
    const broken = await form('PUT', `/sources/${id}`, `component_id=${componentId}&name=%zz`, 'application/x-www-form-urlencoded; charset=windows-1252');
    expect([broken.status, (await broken.json()).details]).toEqual([400, { reason: 'bad_percent_encoding' }]);
    // The query string of the same request is refused as before.
    const query = await form('PUT', `/sources/${id}?name=%ff`, `component_id=${componentId}`);
    expect([query.status, (await query.json()).error]).toEqual([400, 'the URL is not valid (bad percent-encoding)']);
  });
});
