import { admin, client, createUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { startSystem, System } from './support/system';

const OK_STEP = 'export default { async run() { return 1; } };';

/**
 * The spec's common parameter `org_id` is "the org in which the operation takes effect" on every route: the
 * `/users/me/…` lists with it list that org's resources (as `/orgs/{org_id}/…`), not the caller's own.
 */
describe('GET /users/me/… lists with org_id', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
  });
  afterAll(async () => system?.stop());

  it("list the org's resources for a member, exactly as the org routes do; a non-member gets the org routes' 404", async () => {
    const member = createUser(system);
    const other = createUser(system);
    const org = admin(system, ['orgs', 'create', '--name', 'lists org', '--orgname', `lists-${member.id.slice(3, 12)}`]);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', member.id]);
    const m = client(system, member.apiKey);
    const o = client(system, other.apiKey);
    const q = `org_id=${org.id}`;

    const own = await m.post('/sources', { component_code: HTTP_SOURCE });
    const emitter = await m.post(`/sources?${q}`, { component_code: HTTP_SOURCE });
    const listener = await m.post(`/sources?${q}`, { component_code: HTTP_SOURCE });
    expect([own.status, emitter.status, listener.status]).toEqual([200, 200, 200]);
    expect((await m.post(`/webhooks?${q}`, { url: 'https://example.com/hook' })).status).toBe(200);
    expect((await m.post(`/subscriptions?${q}`, { emitter_id: emitter.body.data.id, listener_id: listener.body.data.id })).status).toBe(200);
    expect((await m.post(`/workflows?${q}`, { name: 'org flow', trigger: { manual: {} }, steps: [{ name: 'ok', code: OK_STEP }] })).status).toBe(200);

    for (const list of ['sources', 'webhooks', 'subscriptions', 'workflows', 'usage']) {
      const ofOrg = await m.get(`/orgs/${org.id}/${list}`);
      const mine = await m.get(`/users/me/${list}?${q}`);
      expect([list, mine.status, mine.body]).toEqual([list, 200, ofOrg.body]);
      if (list !== 'usage') expect([list, ofOrg.body.data.length]).toEqual([list, list === 'sources' ? 2 : 1]);
      const refused = await o.get(`/users/me/${list}?${q}`);
      expect([list, refused.status, refused.body]).toEqual([list, 404, (await o.get(`/orgs/${org.id}/${list}`)).body]);
    }
    expect((await m.get('/users/me/usage?' + q)).body.data).toMatchObject({ owner_id: org.id, daily_invocations_quota: null });
    // Without org_id, the caller's own.
    expect((await m.get('/users/me/sources')).body.data.map((s: { id: string }) => s.id)).toEqual([own.body.data.id]);
    expect((await m.get('/users/me/webhooks')).body.data).toEqual([]);
  });
});
