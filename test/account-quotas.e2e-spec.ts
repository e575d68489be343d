import { admin, client, createUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { startSystem, System } from './support/system';

/**
 * What one account may hold (apps/api/src/common/account-quota.ts): sources, workflows, webhooks and
 * subscriptions each have a per-account quota; one more is answered 403 `quota_exceeded`, other accounts
 * (an org is an account of its own) are not held back, and deleting makes room again.
 */
const STEP = `export default defineComponent({ async run({ steps }) { return steps.trigger.event; } });`;

describe('account quotas', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem(
      { SOURCES_MAX_PER_ACCOUNT: '3', WORKFLOWS_MAX_PER_ACCOUNT: '2', WEBHOOKS_MAX_PER_ACCOUNT: '2', SUBSCRIPTIONS_MAX_PER_ACCOUNT: '3', COMPONENT_MAX_BYTES: '150000', COMPONENT_BYTES_PER_DAY_PER_ACCOUNT: '310000' },
      { apps: ['api'] },
    );
  });
  afterAll(async () => {
    await system?.stop();
  });

  const refused = (resource: string, limit: number) => ({ status: 403, body: { error: expect.stringContaining(`${limit} ${resource}`), code: 'quota_exceeded', details: { resource, limit } } });
  const outcome = (res: { status: number; body: unknown }) => ({ status: res.status, body: res.body });

  it('sources: concurrent creates never pass the quota together; other accounts and orgs have their own; a delete makes room', async () => {
    const owner = createUser(system);
    const api = client(system, owner.apiKey);
    const create = (path = '/sources') => api.post(path, { component_code: HTTP_SOURCE });
    const first = await Promise.all(Array.from({ length: 6 }, () => create()));
    expect(first.map((r) => r.status).sort()).toEqual([200, 200, 200, 403, 403, 403]);
    expect(outcome(first.find((r) => r.status === 403)!)).toEqual(refused('sources', 3));
    const listed = (await api.get('/users/me/sources')).body;
    expect(listed.page_info.total_count).toBe(3);

    // Another user, and an org the owner belongs to, count apart.
    expect((await client(system, createUser(system).apiKey).post('/sources', { component_code: HTTP_SOURCE })).status).toBe(200);
    const org = admin(system, ['orgs', 'create', '--name', 'Quota', '--orgname', `quota-${owner.id.slice(2, 12).toLowerCase()}`]);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', owner.id]);
    expect((await create(`/sources?org_id=${org.id}`)).status).toBe(200);

    expect((await api.del(`/sources/${listed.data[0].id}`)).status).toBe(204);
    expect((await create()).status).toBe(200);
    expect(outcome(await create())).toEqual(refused('sources', 3));
  });

  it('webhooks: the third is refused until one is deleted', async () => {
    const api = client(system, createUser(system).apiKey);
    const hook = () => api.post('/webhooks', { url: 'https://example.com/hook' });
    const made = [await hook(), await hook()];
    expect(made.map((r) => r.status)).toEqual([200, 200]);
    expect(outcome(await hook())).toEqual(refused('webhooks', 2));
    expect((await api.del(`/webhooks/${made[0].body.data.id}`)).status).toBe(204);
    expect((await hook()).status).toBe(200);
  });

  it('workflows: the third is refused before its inline trigger source is deployed', async () => {
    const api = client(system, createUser(system).apiKey);
    const workflow = (name: string) => api.post('/workflows', { name, trigger: { source: { code: HTTP_SOURCE, props: {} } }, steps: [{ name: 'echo', code: STEP }] });
    expect((await workflow('one')).status).toBe(200);
    expect((await workflow('two')).status).toBe(200);
    expect(outcome(await workflow('three'))).toEqual(refused('workflows', 2));
    // Only the two deployed workflows' trigger sources exist.
    expect((await api.get('/users/me/sources')).body.page_info.total_count).toBe(2);
    expect((await api.get('/users/me/workflows')).body.data.map((w: { name: string }) => w.name).sort()).toEqual(['one', 'two']);
  });

  it('component code: what an account saves in 24 hours is bounded by bytes, sources deployed from code included', async () => {
    const api = client(system, createUser(system).apiKey);
    // About 140,000 bytes each, and a small one that counts 16 KiB (every save does): 296,384 of the 310,000-byte budget.
    const big = (n: number) => `module.exports = { name: "big ${n}", version: "0.0.1", props: {}, async run() {}, pad: ${JSON.stringify('x'.repeat(139_900))} };`;
    expect((await api.post('/components', { component_code: big(1) })).status).toBe(200);
    expect((await api.post('/sources', { component_code: big(2) })).status).toBe(200);
    expect((await api.post('/components', { component_code: HTTP_SOURCE })).status).toBe(200);
    const refused = await api.post('/components', { component_code: HTTP_SOURCE });
    expect([refused.status, refused.body.code]).toEqual([429, 'rate_limited']);
    expect(refused.body.error).toContain('COMPONENT_BYTES_PER_DAY_PER_ACCOUNT');
    // The first save leaves the 24-hour window first, and this one fits then.
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(24 * 3600 - 120);
    expect(retryAfter).toBeLessThanOrEqual(24 * 3600);
    expect(refused.body.details.retry_after_seconds).toBe(retryAfter);
    expect((await api.post('/sources', { component_code: big(4) })).status).toBe(429);
    // Nothing of the refused saves was stored; another account saves as before.
    expect((await api.get('/users/me/sources')).body.page_info.total_count).toBe(1);
    expect((await client(system, createUser(system).apiKey).post('/components', { component_code: big(5) })).status).toBe(200);
  });

  it("component code: what is read from the code counts too (a few hundred bytes of code once stored megabytes of description and props per save)", async () => {
    const api = client(system, createUser(system).apiKey);
    // Under 200 bytes of code each, which make 200,000 characters of text that does not compress as they are read.
    const described = 'module.exports = { name: "d", version: "1", description: require("crypto").randomBytes(150000).toString("base64"), props: {}, async run() {} };';
    const labelled = 'const l = () => require("crypto").randomBytes(1500).toString("base64"); module.exports = { name: "p", version: "1", props: Object.fromEntries(Array.from({ length: 100 }, (_, i) => ["p" + i, { type: "string", label: l() }])), async run() {} };';
    const first = await api.post('/components', { component_code: described });
    expect([first.status, first.body.data?.description?.length]).toEqual([200, 200_000]);
    // 200,000 and more of the 310,000-byte budget are spent: the next such save is over it, whichever way it is stored.
    for (const code of [described, labelled]) {
      const refused = await api.post('/components', { component_code: code });
      expect([refused.status, refused.body.code]).toEqual([429, 'rate_limited']);
      expect(refused.body.error).toContain('COMPONENT_BYTES_PER_DAY_PER_ACCOUNT');
    }
    expect((await client(system, createUser(system).apiKey).post('/components', { component_code: labelled })).status).toBe(200);
  });

  it('subscriptions: auto-subscriptions count too; making an existing one again is not refused', async () => {
    const api = client(system, createUser(system).apiKey);
    const source = (await api.post('/sources', { component_code: HTTP_SOURCE })).body.data.id as string;
    const hooks = [];
    for (const url of ['https://example.com/a', 'https://example.com/b']) hooks.push((await api.post('/webhooks', { url })).body.data.id as string);
    expect((await api.post(`/subscriptions?emitter_id=${source}&listener_id=${hooks[0]}`)).status).toBe(200);
    expect((await api.post(`/subscriptions?emitter_id=${source}&listener_id=${hooks[1]}`)).status).toBe(200);
    expect((await api.post(`/auto_subscriptions?event_name=$errors&listener_id=${hooks[0]}`)).status).toBe(200);
    expect(outcome(await api.post(`/subscriptions?emitter_id=${source}&listener_id=${hooks[1]}&event_name=custom`))).toEqual(refused('subscriptions', 3));
    expect(outcome(await api.post(`/auto_subscriptions?event_name=$logs&listener_id=${hooks[1]}`))).toEqual(refused('subscriptions', 3));
    // Idempotent creates answer the existing subscription.
    expect((await api.post(`/subscriptions?emitter_id=${source}&listener_id=${hooks[0]}`)).status).toBe(200);
    expect((await api.post(`/auto_subscriptions?event_name=$errors&listener_id=${hooks[0]}`)).status).toBe(200);
    expect((await api.del(`/subscriptions?emitter_id=${source}&listener_id=${hooks[1]}&event_name=`)).status).toBe(204);
    expect((await api.post(`/subscriptions?emitter_id=${source}&listener_id=${hooks[1]}&event_name=custom`)).status).toBe(200);
  });
  it("subscriptions: one made with org_id is the org's, charged to its quota, so one of its ends must be the org's; a member's route between their own ends is refused 404", async () => {
    const member = createUser(system);
    const api = client(system, member.apiKey);
    const org = admin(system, ['orgs', 'create', '--name', 'Subs', '--orgname', `subs-${member.id.slice(2, 12).toLowerCase()}`]);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', member.id]);
    const mine = (await api.post('/sources', { component_code: HTTP_SOURCE })).body.data.id as string;
    const myHook = (await api.post('/webhooks', { url: 'https://example.com/mine' })).body.data.id as string;
    const orgHook = (await api.post(`/webhooks?org_id=${org.id}`, { url: 'https://example.com/org' })).body.data.id as string;
    // Neither end is the org's: answered as a resource outside the org is; nothing is listed in or charged to the org.
    expect(outcome(await api.post(`/subscriptions?org_id=${org.id}&emitter_id=${mine}&listener_id=${myHook}`))).toEqual({
      status: 404,
      body: { error: expect.stringContaining(`org ${org.id} owns neither`), code: 'not_found', details: { org_id: org.id, emitter_id: mine, listener_id: myHook } },
    });
    expect((await api.get(`/orgs/${org.id}/subscriptions`)).body.data).toEqual([]);
    // One end the org's (the listener; or the emitter: a glob is the org's sources) makes the org's subscription.
    const orgs = [
      await api.post(`/subscriptions?org_id=${org.id}&emitter_id=${mine}&listener_id=${orgHook}`),
      await api.post(`/subscriptions?org_id=${org.id}&emitter_id=dc_*&listener_id=${myHook}`),
    ];
    expect(orgs.map((r) => r.status)).toEqual([200, 200]);
    expect((await api.get(`/orgs/${org.id}/subscriptions`)).body.data).toEqual(orgs.map((r) => r.body.data));
    // Without org_id the route between the member's own ends is theirs, in their list and quota.
    const own = await api.post(`/subscriptions?emitter_id=${mine}&listener_id=${myHook}`);
    expect(own.status).toBe(200);
    expect((await api.get('/users/me/subscriptions')).body.data).toEqual([own.body.data]);
  });
  it("subscriptions: those a new source or workflow would get from auto-subscriptions count too, so auto-subscriptions cannot multiply the quota by the sources", async () => {
    const api = client(system, createUser(system).apiKey);
    const hook = (await api.post('/webhooks', { url: 'https://example.com/auto' })).body.data.id as string;
    expect((await api.post(`/auto_subscriptions?event_name=$errors&listener_id=${hook}`)).status).toBe(200);
    // 1 auto-subscription + 1 subscription per new source: the quota of 3 has room for two sources, whether they come at once or not.
    const made = await Promise.all(Array.from({ length: 3 }, () => api.post('/sources', { component_code: HTTP_SOURCE })));
    expect(made.map((r) => r.status).sort()).toEqual([200, 200, 403]);
    expect(outcome(made.find((r) => r.status === 403)!)).toEqual({ status: 403, body: { error: expect.stringContaining('SUBSCRIPTIONS_MAX_PER_ACCOUNT'), code: 'quota_exceeded', details: { resource: 'subscriptions', limit: 3 } } });
    // A workflow (its inline trigger source gets one too) is refused the same way, and leaves no trigger source behind.
    const workflow = await api.post('/workflows', { name: 'auto', trigger: { source: { code: HTTP_SOURCE, props: {} } }, steps: [{ name: 'echo', code: STEP }] });
    expect([workflow.status, workflow.body.code, workflow.body.details]).toEqual([403, 'quota_exceeded', { resource: 'subscriptions', limit: 3 }]);
    expect((await api.get('/users/me/sources')).body.page_info.total_count).toBe(2);
    expect((await api.get('/users/me/subscriptions')).body.data).toHaveLength(2);
    // Deleting a source removes its subscription and makes room for the next one.
    const first = made.find((r) => r.status === 200)!.body.data.id as string;
    expect((await api.del(`/sources/${first}`)).status).toBe(204);
    expect((await api.post('/sources', { component_code: HTTP_SOURCE })).status).toBe(200);
    expect((await api.get('/users/me/subscriptions')).body.data).toHaveLength(2);
  });
  it('webhooks, workflows and (auto-)subscriptions: twenty concurrent creates end at the quota, and refused workflows leave no trigger source', async () => {
    const api = client(system, createUser(system).apiKey);
    const many = <T>(n: number, make: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => make(i)));
    const statuses = (rs: { status: number }[]) => rs.map((r) => r.status).sort();
    const ok = (n: number, of: number) => [...Array(n).fill(200), ...Array(of - n).fill(403)];

    const hooks = await many(20, (i) => api.post('/webhooks', { url: `https://example.com/race/${i}` }));
    expect(statuses(hooks)).toEqual(ok(2, 20));

    const source = (await api.post('/sources', { component_code: HTTP_SOURCE })).body.data.id as string;
    const hook = hooks.find((r) => r.status === 200)!.body.data.id as string;
    const subs = await many(20, (i) => (i < 2 ? api.post(`/auto_subscriptions?event_name=${['$errors', '$logs'][i]}&listener_id=${hook}`) : api.post(`/subscriptions?emitter_id=${source}&listener_id=${hook}&event_name=e${i}`)));
    expect(statuses(subs)).toEqual(ok(3, 20));

    const other = client(system, createUser(system).apiKey);
    const workflows = await many(20, (i) => other.post('/workflows', { name: `race ${i}`, trigger: { source: { code: HTTP_SOURCE, props: {} } }, steps: [{ name: 'echo', code: STEP }] }));
    // Refused by the workflows quota, or by the sources quota for their trigger source: nothing past either is kept.
    expect(workflows.filter((r) => r.status === 200)).toHaveLength(2);
    expect(workflows.filter((r) => r.status !== 200).map((r) => [r.status, r.body.code])).toEqual(Array(18).fill([403, 'quota_exceeded']));
    expect((await other.get('/users/me/workflows')).body.data).toHaveLength(2);
    expect((await other.get('/users/me/sources')).body.page_info.total_count).toBe(2);
  });
});
