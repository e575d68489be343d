import { admin } from './support/accounts';
import { apiOnlySystem } from './support/system-with-user';

const HOOK = 'module.exports = { name: "Hooked", version: "1", props: { github: { type: "app", app: "github" }, hook: { type: "$.interface.apphook", appProp: "github", eventNames: ["push"] } }, async run(e) { this.$emit(e) } };';

/** What a second acceptance pass of the REST API against the spec and docs/api.md found answered otherwise. */
describe('API to the letter, second pass: common parameters and authentication', () => {
  const ctx = apiOnlySystem();
  let orgX: string;
  let orgY: string;

  beforeAll(() => {
    const suffix = ctx.user.id.slice(2, 12).toLowerCase();
    orgX = admin(ctx.system, ['orgs', 'create', '--name', 'X', '--orgname', `x-${suffix}`]).id;
    orgY = admin(ctx.system, ['orgs', 'create', '--name', 'Y', '--orgname', `y-${suffix}`]).id;
    for (const org of [orgX, orgY]) admin(ctx.system, ['orgs', 'add-member', '--org', org, '--user', ctx.user.id]);
  });

  it('acts in the org named by org_id in the body of a POST, which wins over the query string (hook_events ran the personal sources, workflows took the query)', async () => {
    const component = (await ctx.api.post(`/components?org_id=${orgX}`, { component_code: HOOK })).body.data.id as string;
    const source = (await ctx.api.post(`/sources?org_id=${orgX}`, { component_id: component })).body.data.id as string;
    expect(source).toMatch(/^dc_/);

    const inQuery = await ctx.api.post(`/apps/github/hook_events?org_id=${orgX}`, { event_name: 'push', event: { n: 1 } });
    const inBody = await ctx.api.post('/apps/github/hook_events', { event_name: 'push', event: { n: 2 }, org_id: orgX });
    const bodyWins = await ctx.api.post(`/apps/github/hook_events?org_id=${orgY}`, { event_name: 'push', event: { n: 3 }, org_id: orgX });
    for (const res of [inQuery, inBody, bodyWins]) {
      expect([res.status, res.body.data?.delivered?.map((d: { source_id: string }) => d.source_id)]).toEqual([202, [source]]);
    }
    // The personal namespace has no such source.
    expect((await ctx.api.post('/apps/github/hook_events', { event_name: 'push', event: { n: 4 } })).body.data).toEqual({ delivered: [] });

    const workflow = { name: 'in-y', trigger: { manual: {} }, steps: [{ name: 's', code: 'export default { async run() { return 1; } };' }] };
    const created = await ctx.api.post(`/workflows?org_id=${orgX}`, { ...workflow, org_id: orgY });
    expect([created.status, created.body.data?.owner_id]).toEqual([200, orgY]);
    expect((await ctx.api.get(`/orgs/${orgY}/workflows`)).body.data.map((w: { id: string }) => w.id)).toEqual([created.body.data.id]);
    expect((await ctx.api.get(`/orgs/${orgX}/workflows`)).body.data).toEqual([]);
  });

  it('answers 401 with the WWW-Authenticate challenge HTTP requires of it, on the API and the event streams', async () => {
    const cases: [string, Record<string, string>, string][] = [
      ['missing', {}, 'Bearer realm="api"'],
      ['malformed', { authorization: `Basic ${Buffer.from(`x:${ctx.user.apiKey}`).toString('base64')}` }, 'Bearer realm="api", error="invalid_request"'],
      ['invalid', { authorization: 'Bearer pd_not-a-key' }, 'Bearer realm="api", error="invalid_token"'],
    ];
    for (const url of [`${ctx.system.baseUrl}/users/me`, `${ctx.system.baseUrl}/users/me/sources`, `${ctx.system.origin}/sse/dc/dc_x/emits`]) {
      for (const [what, headers, challenge] of cases) {
        const res = await fetch(url, { headers });
        expect([what, url, res.status, res.headers.get('www-authenticate'), ((await res.json()) as { code: string }).code]).toEqual([what, url, 401, challenge, 'unauthorized']);
      }
    }
  });
});
