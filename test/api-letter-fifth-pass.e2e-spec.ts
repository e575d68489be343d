import { apiOnlySystem } from './support/system-with-user';
import { insertSource } from './events.helpers';

/** What an audit of docs/api.md against the running service found answered otherwise than the docs say. */
describe('API to the letter, fifth pass: docs/api.md against the running service', () => {
  const ctx = apiOnlySystem();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const send = async (method: string, path: string, body: string, type: string): Promise<{ status: number; body: any }> => {
    const res = await fetch(`${ctx.system.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': type }, body });
    return { status: res.status, body: await res.json() };
  };

  it('keeps only the fields an include names: one naming fields no object has answers each object as {}, one naming none (include=, include=,) every field', async () => {
    const me = (await ctx.api.get('/users/me')).body;
    expect(Object.keys(me.data).length).toBeGreaterThan(1);
    for (const q of ['include=', 'include=,', 'include=%20,%20', 'exclude=nope']) expect([q, (await ctx.api.get(`/users/me?${q}`)).body]).toEqual([q, me]);
    expect((await ctx.api.get('/users/me?include=nope')).body).toEqual({ data: {} });
    expect((await ctx.api.get('/users/me?include=nope,id')).body).toEqual({ data: { id: ctx.user.id } });
    await ctx.api.post('/webhooks', { url: 'https://example.com/include' });
    const list = await ctx.api.get('/users/me/webhooks?include=nope');
    expect([list.status, list.body.data]).toEqual([200, [{}]]);
  });

  it('refuses a form of fields on the routes that take JSON only with 415, as docs/api.md says (event=x ran with the event "x")', async () => {
    const source = await insertSource(ctx.system, ctx.user.id);
    const form = 'application/x-www-form-urlencoded';
    const refused = { error: 'a form (application/x-www-form-urlencoded) is not accepted on this route: send the request body as application/json (or a type ending in +json, or text/plain holding JSON)', code: 'unsupported_media_type', details: { header: 'content-type' } };
    const routes: [string, string, string][] = [
      ['POST', `/sources/${source}/run`, 'event=x'],
      ['POST', `/sources/${source}/app_hook`, 'event_name=push&event=x'],
      ['POST', '/apps/github/hook_events', 'event_name=push&event=x'],
      ['POST', '/workflows', 'name=x'],
      ['PUT', '/workflows/wf_nope', 'name=x'],
      ['POST', '/workflows/wf_nope/run', 'event=x'],
      ['POST', '/workflows/wf_nope/replay', 'event_id=1700000000000-0'],
    ];
    for (const [method, path, body] of routes) {
      for (const type of [form, `${form}; charset=utf-8`, 'Application/X-WWW-Form-Urlencoded']) {
        const res = await send(method, path, body, type);
        expect([method, path, type, res.status, res.body]).toEqual([method, path, type, 415, refused]);
      }
    }
    // JSON, JSON as text, and a JSON object labelled as a form (curl -d) are read as before.
    for (const type of ['application/json', 'text/plain', form]) {
      const res = await send('POST', `/sources/${source}/run`, '{"event":"x"}', type);
      expect([type, res.status, typeof res.body.data?.invocation_id]).toEqual([type, 202, 'string']);
    }
    // An empty form is no body, as everywhere.
    expect((await send('POST', `/sources/${source}/run`, '', form)).status).toBe(202);
    // Routes that read their fields from the query string still take a form of them.
    expect((await send('POST', '/webhooks', 'url=https%3A%2F%2Fexample.com%2Fform', form)).status).toBe(200);
  });

  it('gives details.errors for configured_props in the query string or a form that is not a JSON object, as for the same value in a JSON body (it had none)', async () => {
    const errors = [{ field: 'configured_props', rule: 'type', message: 'must be object' }];
    for (const value of [5, [], 'abc', null]) {
      const json = await ctx.api.post('/sources', { component_id: 'sc_nope', configured_props: value });
      expect([value, json.status, json.body.details]).toEqual([value, 400, { in: 'body', field: 'configured_props', errors }]);
    }
    for (const text of ['5', '[]', '"abc"', 'abc', 'null']) {
      const query = await ctx.api.post(`/sources?component_id=sc_nope&configured_props=${encodeURIComponent(text)}`);
      expect([text, query.status, query.body]).toEqual([
        text,
        400,
        { error: 'configured_props must be an object (in the query string: its JSON text)', code: 'invalid_request', details: { in: 'query', field: 'configured_props', errors } },
      ]);
      const form = await send('POST', '/sources', `component_id=sc_nope&configured_props=${encodeURIComponent(text)}`, 'application/x-www-form-urlencoded');
      expect([text, form.status, form.body.details]).toEqual([text, 400, { in: 'body', field: 'configured_props', errors }]);
      const reload = await ctx.api.post(`/components/sc_nope/props/reload?configured_props=${encodeURIComponent(text)}`);
      expect([text, reload.status]).toEqual([text, 404]);
    }
  });

  it('refuses a component_url over 2,048 characters naming where it was given (one over 10,000 had no details.in)', async () => {
    const source = await insertSource(ctx.system, ctx.user.id);
    for (const length of [2049, 10_001]) {
      const url = `https://example.com/${'a'.repeat(length - 'https://example.com/'.length)}`;
      const refused = (where: 'query' | 'body') => ({
        error: 'component_url must NOT have more than 2048 characters',
        code: 'invalid_request',
        details: { in: where, field: 'component_url', errors: [{ field: 'component_url', rule: 'maxLength', message: 'must NOT have more than 2048 characters' }] },
      });
      for (const [method, path] of [['POST', '/components'], ['POST', '/sources'], ['PUT', `/sources/${source}`]]) {
        const body = await send(method, path, JSON.stringify({ component_url: url }), 'application/json');
        expect([length, method, path, body.status, body.body]).toEqual([length, method, path, 400, refused('body')]);
        const query = await send(method, `${path}?component_url=${encodeURIComponent(url)}`, '', 'application/json');
        expect([length, method, path, query.status, query.body]).toEqual([length, method, path, 400, refused('query')]);
      }
    }
  });

  it('refuses a blank org_id as an empty one, 400 (org_id=%20 answered 404)', async () => {
    const empty = await ctx.api.get('/users/me/sources?org_id=');
    expect([empty.status, empty.body.details]).toEqual([400, { in: 'query', field: 'org_id' }]);
    for (const blank of ['%20', '%20%20', '%09', '%E3%80%80']) {
      for (const path of ['/users/me/sources', '/users/me/webhooks', `/sources/dc_nope`]) {
        const res = await ctx.api.get(`${path}?org_id=${blank}`);
        expect([path, blank, res.status, res.body]).toEqual([path, blank, 400, empty.body]);
      }
    }
    const body = await ctx.api.post('/webhooks', { url: 'https://example.com/blank-org', org_id: ' ' });
    expect([body.status, body.body]).toEqual([400, { ...empty.body, details: { in: 'body', field: 'org_id' } }]);
    const form = await send('POST', '/webhooks', 'url=https%3A%2F%2Fexample.com%2Fblank-org&org_id=+', 'application/x-www-form-urlencoded');
    expect([form.status, form.body]).toEqual([400, { ...empty.body, details: { in: 'body', field: 'org_id' } }]);
    expect((await ctx.api.get('/users/me/webhooks')).body.data.map((w: { url: string }) => w.url)).not.toContain('https://example.com/blank-org');
  });
});
