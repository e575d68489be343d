import { admin, client, createUser, TestUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { sql } from './events.helpers';
import { startSystem, System } from './support/system';

/**
 * A create or update that is refused stores nothing (docs/api.md "Sources", docs/workflows.md): the component its code
 * names is saved with the source or workflow it is for, in one transaction, once everything else was accepted. Before,
 * POST /sources with an action's code, or with props the component refuses, saved the component and then answered
 * 400; so did a workflow whose later step, or whose inline trigger source, was refused after its first code step.
 */
const ACTION = 'module.exports = { name: "An action", key: "refused-action", version: "0.0.1", type: "action", props: {}, async run() { return 1; } };';
const SOURCE_NEEDS_TOKEN = 'module.exports = { name: "Needs token", key: "needs-token", version: "0.0.1", props: { token: { type: "string" } }, async run() {} };';
const STEP = (n: number) => `export default defineComponent({ async run() { return ${n}; } });`;

describe('a refused create or update stores nothing', () => {
  let system: System;
  let user: TestUser;
  let api: ReturnType<typeof client>;
  let org: string;

  beforeAll(async () => {
    system = await startSystem({ REGISTRY_DIR: 'off' }, { apps: ['api'] });
    user = createUser(system);
    api = client(system, user.apiKey);
    org = admin(system, ['orgs', 'create', '--name', 'refusals', '--orgname', `refusals-${user.id.slice(2, 10).toLowerCase()}`]).id;
    admin(system, ['orgs', 'add-member', '--org', org, '--user', user.id]);
  }, 120_000);
  afterAll(async () => {
    await system?.stop();
  });

  /** Every component and source row of the caller's account and org, deleted ones too. */
  const stored = async () => ({
    components: (await sql<{ id: string }>(system, 'select id from components where owner_id = any($1) order by id', [[user.id, org]])).map((r) => r.id),
    sources: (await sql<{ id: string }>(system, 'select id from sources where owner_id = any($1) order by id', [[user.id, org]])).map((r) => r.id),
    workflows: (await sql<{ id: string }>(system, 'select id from workflows where owner_id = any($1) order by id', [[user.id, org]])).map((r) => r.id),
  });

  const refused = async (what: string, call: () => Promise<{ status: number; body: { code?: string } }>, status: number, code: string) => {
    const before = await stored();
    const res = await call();
    expect([what, res.status, res.body?.code]).toEqual([what, status, code]);
    expect([what, await stored()]).toEqual([what, before]);
  };

  it('POST /sources with the code of an action, or props its component refuses, saves no component', async () => {
    await refused('action code', () => api.post('/sources', { component_code: ACTION }), 400, 'invalid_component');
    await refused('action code in an org', () => api.post(`/sources?org_id=${org}`, { component_code: ACTION }), 400, 'invalid_component');
    await refused('bad props', () => api.post('/sources', { component_code: SOURCE_NEEDS_TOKEN, configured_props: { token: 5 } }), 400, 'invalid_props');
    await refused('unknown prop', () => api.post('/sources', { component_code: HTTP_SOURCE, configured_props: { nope: 1 } }), 400, 'invalid_props');
    expect((await api.get('/components/refused-action')).status).toBe(404);
    expect((await api.get('/components/needs-token')).status).toBe(404);
  });

  it('POST /sources?org_id= with a component of your own account and refused props copies nothing into the org', async () => {
    const mine = (await api.post('/components', { component_code: SOURCE_NEEDS_TOKEN })).body.data.id as string;
    const action = (await api.post('/components', { component_code: ACTION })).body.data.id as string;
    await refused('copy with bad props', () => api.post(`/sources?org_id=${org}`, { component_id: mine, configured_props: { token: 5 } }), 400, 'invalid_props');
    await refused('copy of an action', () => api.post(`/sources?org_id=${org}`, { component_id: action }), 400, 'invalid_component');
    // Accepted, it is copied once, with the source.
    const before = await stored();
    const ok = await api.post(`/sources?org_id=${org}`, { component_id: mine, configured_props: { token: 't' } });
    expect(ok.status).toBe(200);
    const after = await stored();
    expect(after.components.length - before.components.length).toBe(1);
    expect(after.components).toContain(ok.body.data.component_id);
  });

  it('PUT /sources/{id} with new code and refused props keeps the source as it was and saves no component', async () => {
    const src = (await api.post('/sources', { component_code: HTTP_SOURCE })).body.data;
    await refused('update to bad props', () => api.put(`/sources/${src.id}`, { component_code: SOURCE_NEEDS_TOKEN, configured_props: { token: 5 } }), 400, 'invalid_props');
    await refused('update to an action', () => api.put(`/sources/${src.id}`, { component_code: ACTION }), 400, 'invalid_component');
    expect((await api.get(`/sources/${src.id}`)).body.data.component_id).toBe(src.component_id);
  });

  it('a refused workflow saves none of its steps\' components, nor its inline trigger source', async () => {
    const steps = [{ name: 'one', code: STEP(1) }];
    await refused('second step a source', () => api.post('/workflows', { name: 'w1', trigger: { manual: {} }, steps: [...steps, { name: 'two', code: HTTP_SOURCE }] }), 400, 'invalid_workflow');
    await refused('second step bad props', () => api.post('/workflows', { name: 'w2', trigger: { manual: {} }, steps: [...steps, { name: 'two', code: SOURCE_NEEDS_TOKEN.replace('props:', 'type: "action", props:'), props: { token: 5 } }] }), 400, 'invalid_workflow');
    await refused('inline trigger source refused', () => api.post('/workflows', { name: 'w3', trigger: { source: { code: SOURCE_NEEDS_TOKEN, props: { token: 5 } } }, steps }), 400, 'invalid_workflow');
    await refused('inline trigger source an action', () => api.post('/workflows', { name: 'w4', trigger: { source: { code: ACTION } }, steps }), 400, 'invalid_workflow');
    // A deploy of an existing workflow, refused the same ways, stores nothing either.
    const wf = (await api.post('/workflows', { name: 'kept', trigger: { manual: {} }, steps })).body.data;
    await refused('deploy with a bad second step', () => api.put(`/workflows/${wf.id}`, { name: 'kept', trigger: { manual: {} }, steps: [{ name: 'one', code: STEP(2) }, { name: 'two', code: HTTP_SOURCE }] }), 400, 'invalid_workflow');
    await refused('deploy with a refused trigger source', () => api.put(`/workflows/${wf.id}`, { name: 'kept', trigger: { source: { code: SOURCE_NEEDS_TOKEN, props: { token: 5 } } }, steps: [{ name: 'one', code: STEP(3) }] }), 400, 'invalid_workflow');
    expect((await api.get(`/workflows/${wf.id}`)).body.data.deployment_id).toBe(wf.deployment_id);
  });
});
