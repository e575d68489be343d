import { admin } from './support/accounts';
import { apiOnlySystem } from './support/system-with-user';
import { insertSource, sql } from './events.helpers';

/** What an audit of the REST API against the spec, to the letter, found answered otherwise than the spec and docs say. */
describe('API to the letter: what an audit of the routes against the spec and docs found', () => {
  const ctx = apiOnlySystem();

  it('refuses event_name on GET /workflows/{id}/$errors/event_summaries, whose path names the channel (event_name=$logs answered the $errors events)', async () => {
    const workflow = await ctx.api.post('/workflows', { name: 'errs', trigger: { manual: {} }, steps: [{ name: 's1', code: 'export default defineComponent({ async run() { return 1 } })' }] });
    expect(workflow.status).toBe(200);
    const wf = workflow.body.data.id as string;
    for (const value of ['%24logs', '%24errors', '', 'custom']) {
      const res = await ctx.api.get(`/workflows/${wf}/$errors/event_summaries?event_name=${value}`);
      expect([value, res.status, res.body.error, res.body.details?.fields]).toEqual([value, 400, 'unknown query parameter: event_name', ['event_name']]);
    }
    expect((await ctx.api.get(`/workflows/${wf}/$errors/event_summaries?limit=5&expand=event`)).status).toBe(200);
  });

  it('reads an include or exclude that names no field (include=,) as absent, as an empty one is: every field (include=, answered {})', async () => {
    const empty = await ctx.api.get('/users/me?include=');
    expect(empty.status).toBe(200);
    for (const q of ['include=,', 'include=%20,%20', 'exclude=,,']) {
      const res = await ctx.api.get(`/users/me?${q}`);
      expect([q, res.status, res.body]).toEqual([q, 200, empty.body]);
    }
    expect((await ctx.api.get('/users/me?include=,id,')).body).toEqual({ data: { id: ctx.user.id } });
  });

  it("cuts a truncated event's preview at 1 KB of UTF-8 on a character's edge (it kept 1,024 UTF-16 units: up to 3 KB, all of a 1.2 KB event, or half of an emoji)", async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    const accents = { text: 'é'.repeat(600) };
    const emoji = { text: 'a'.repeat(1012) + '😀'.repeat(10) };
    for (const [i, data] of [accents, emoji].entries()) {
      const json = JSON.stringify(data);
      await sql(ctx.system, `insert into event_summaries (emitter_id, id, id_ms, id_seq, name, channel_class, owner_id, emit_id, summary, event, meta, size_bytes, indexed_at_ms)
        values ($1, $2, $3, 0, '', 'emits', $4, $5, '', $6, '{}', $7, $3)`, [src, `${1_700_000_000_001 + i}-0`, 1_700_000_000_001 + i, ctx.user.id, `emit-${i}`, json, Buffer.byteLength(json)]);
    }
    const res = await ctx.api.get(`/sources/${src}/event_summaries`);
    expect(res.status).toBe(200);
    const [emojiEvent, accentsEvent] = res.body.data.map((d: { event: { $truncated: boolean; size_bytes: number; preview: string } }) => d.event);
    expect(accentsEvent).toEqual({ $truncated: true, size_bytes: 1211, preview: JSON.stringify(accents).slice(0, 516) });
    expect(emojiEvent).toEqual({ $truncated: true, size_bytes: 1063, preview: JSON.stringify(emoji).slice(0, 1021) });
    for (const { preview } of [accentsEvent, emojiEvent]) expect(Buffer.byteLength(preview)).toBeLessThanOrEqual(1024);
  });

  it('refuses a webhook or component URL on port 0, where no server listens (a webhook on it was created and every delivery failed for a day)', async () => {
    const refused = (field: string, value: string) => ({ error: `${field} must not use port 0: no server listens there`, code: 'invalid_request', details: { field, value } });
    const created = await ctx.api.post('/webhooks', { url: 'http://example.com:0/hook' });
    expect([created.status, created.body]).toEqual([400, refused('url', 'http://example.com:0/hook')]);
    const webhook = (await ctx.api.post('/webhooks', { url: 'https://example.com/hook' })).body.data.id as string;
    const updated = await ctx.api.put(`/webhooks/${webhook}`, { url: 'https://example.com:00/hook' });
    expect([updated.status, updated.body]).toEqual([400, refused('url', 'https://example.com:00/hook')]);
    const component = await ctx.api.post('/components', { component_url: 'http://127.0.0.1:0/c.js' });
    expect([component.status, component.body]).toEqual([400, refused('component_url', 'http://127.0.0.1:0/c.js')]);
    expect((await ctx.api.post('/webhooks', { url: 'http://example.com:65535/hook' })).status).toBe(200);
  });

  it("refuses an org_id in the query of an org route that names another org than its path (the path's was answered, the org_id dropped)", async () => {
    const [a, b] = ['a', 'b'].map((n) => admin(ctx.system, ['orgs', 'create', '--name', `letter ${n}`, '--orgname', `letter-${n}-${Date.now()}`]).id);
    for (const org of [a, b]) admin(ctx.system, ['orgs', 'add-member', '--org', org, '--user', ctx.user.id]);
    for (const route of ['sources', 'webhooks', 'subscriptions', 'workflows', 'usage']) {
      const res = await ctx.api.get(`/orgs/${a}/${route}?org_id=${b}`);
      expect([route, res.status, res.body]).toEqual([
        route,
        400,
        { error: `org_id ${b} names another org than the path's ${a}: leave it out`, code: 'invalid_request', details: { in: 'query', field: 'org_id', path_org_id: a } },
      ]);
      expect((await ctx.api.get(`/orgs/${a}/${route}?org_id=${a}`)).status).toBe(200);
    }
    for (const path of [`/workspaces/${a}`, `/workspaces/${a}/subscriptions`]) expect((await ctx.api.get(`${path}?org_id=${b}`)).status).toBe(400);
  });

  it('says how large a request body may be when it refuses one (it said "Request body is too large")', async () => {
    const limit = 2 * 5_242_880 + 1_048_576;
    const body = JSON.stringify({ component_code: 'x'.repeat(limit) });
    const res = await fetch(`${ctx.system.baseUrl}/components`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.user.apiKey}`, 'content-type': 'application/json' },
      body,
    });
    expect([res.status, await res.json()]).toEqual([
      413,
      { error: `the request body is larger than the ${limit} bytes the api accepts`, code: 'payload_too_large', details: { bytes: Buffer.byteLength(body), limit_bytes: limit } },
    ]);
  });
});
