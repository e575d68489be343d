import { admin, client, createUser, TestUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { DocOperation, fillPath, Json, operationsOf } from './support/openapi-requests';
import { startSystem, System } from './support/system';

/**
 * `org_id` is the org an operation takes effect in (spec, "Common parameters"). On a route whose path names a
 * resource (`/sources/{id}`, `/webhooks/{id}`, `/workflows/{id}`, their sub-routes and the event streams), a resource
 * that is not in that org is not found there: `404 not_found`, as for an id of another account's, and nothing is
 * changed (docs/api.md "Organizations"). It was ignored: `org_id` named any org of the caller's and the resource was
 * answered, changed or deleted wherever it was. Generated from the OpenAPI document. A component of yours is the
 * exception: any of your namespaces may deploy it (a copy is saved there), so `org_id` on `/components/{keyOrId}`
 * names where its code runs and keys are looked up.
 */
const STEP = 'export default { async run() { return 1; } };';

type Kind = 'dc' | 'wh' | 'p' | 'sc';
/** Path parameters that name a resource of one namespace. */
const RESOURCE_PARAM = 'id';

describe('org_id on routes that name a resource', () => {
  let system: System;
  let user: TestUser;
  let api: ReturnType<typeof client>;
  let org1: string;
  let org2: string;
  let ops: DocOperation[];
  const create = async (orgId: string | undefined): Promise<Record<Kind, string>> => {
    const into = {} as Record<Kind, string>;
    const q = orgId ? `?org_id=${orgId}` : '';
    const ok = (res: { status: number; text: string; body: { data?: { id?: string } } }, what: string): string => {
      if (res.status !== 200 || !res.body.data?.id) throw new Error(`${what}: ${res.status} ${res.text}`);
      return res.body.data.id;
    };
    into.sc = ok(await api.post(`/components${q}`, { component_code: HTTP_SOURCE }), 'component');
    into.dc = ok(await api.post(`/sources${q}`, { component_id: into.sc }), 'source');
    into.wh = ok(await api.post(`/webhooks${q}`, { url: 'https://example.com/hook' }), 'webhook');
    into.p = ok(await api.post(`/workflows${q}`, { name: `flow-${into.sc}`, trigger: { manual: {} }, steps: [{ name: 's', code: STEP }] }), 'workflow');
    return into;
  };
  /** The caller's resources: in org1, and in their own account. */
  const fixtures = async () => ({ inOrg: await create(org1), personal: await create(undefined) });

  beforeAll(async () => {
    system = await startSystem({ REGISTRY_DIR: 'off' }, { apps: ['api'] });
    user = createUser(system);
    api = client(system, user.apiKey);
    const tag = user.id.slice(2, 10).toLowerCase();
    org1 = admin(system, ['orgs', 'create', '--name', 'one', '--orgname', `one-${tag}`]).id;
    org2 = admin(system, ['orgs', 'create', '--name', 'two', '--orgname', `two-${tag}`]).id;
    for (const o of [org1, org2]) admin(system, ['orgs', 'add-member', '--org', o, '--user', user.id]);
    // Deletes of the resources themselves last: the other routes are called on what they would delete.
    const last = (op: DocOperation) => (op.method === 'DELETE' && /^\/v1\/\w+\/\{id\}$/.test(op.path) ? 1 : 0);
    ops = operationsOf((await (await fetch(`${system.baseUrl}/openapi.json`)).json()) as Json)
      .filter((op) => op.parameters.some((p) => p.in === 'path' && p.name === RESOURCE_PARAM))
      .sort((x, y) => last(x) - last(y));
  }, 120_000);
  afterAll(async () => {
    await system?.stop();
  });

  const kindOf = (op: DocOperation): Kind =>
    op.path.includes('/workflows/') || op.path.startsWith('/sse/p/') ? 'p' : op.path.includes('/webhooks/') ? 'wh' : 'dc';

  /** A body the route takes (so that the answer is about the id, not a 400). */
  const bodyOf = (op: DocOperation, ids: Record<Kind, string>): Json | undefined => {
    if (!op.body) return undefined;
    if (op.path === '/v1/workflows/{id}') return { name: 'renamed', trigger: { manual: {} }, steps: [{ name: 's', code: STEP }] };
    if (op.path === '/v1/sources/{id}') return { component_id: ids.sc, name: 'renamed' };
    if (op.path === '/v1/webhooks/{id}') return { name: 'renamed' };
    if (op.path.endsWith('/replay')) return { event_id: '1700000000000-0' };
    if (op.path.endsWith('/app_hook')) return { event: {} };
    return {};
  };

  const send = async (op: DocOperation, ids: Record<Kind, string>, orgId?: string): Promise<{ status: number; text: string; body?: Json }> => {
    const id = ids[kindOf(op)];
    const path = fillPath(op.path, { id, channel: '$errors' });
    const body = bodyOf(op, ids);
    const ac = new AbortController();
    const res = await fetch(`${system.origin}${path}${orgId ? `?org_id=${orgId}` : ''}`, {
      method: op.method,
      headers: { authorization: `Bearer ${user.apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: ac.signal,
    });
    const text = res.headers.get('content-type')?.startsWith('text/event-stream') ? '' : await res.text();
    ac.abort();
    let parsed: Json | undefined;
    try {
      parsed = text ? (JSON.parse(text) as Json) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, text, body: parsed };
  };

  it('answers 404 for a resource outside the org org_id names (another org of the caller\'s, or their own account), and changes nothing', async () => {
    const { inOrg, personal } = await fixtures();
    const failures: string[] = [];
    for (const op of ops) {
      for (const [what, ids, orgId] of [['an org1 resource with org_id=org2', inOrg, org2], ['a personal resource with org_id=org1', personal, org1]] as const) {
        const res = await send(op, ids, orgId);
        if (res.status !== 404 || res.body?.code !== 'not_found') failures.push(`${op.method} ${op.path}, ${what}: ${res.status} ${res.text.slice(0, 200)}`);
      }
    }
    expect(ops.length).toBeGreaterThan(20);
    // A component of yours is found by id with org_id of any org of yours, or none.
    for (const orgId of [org2, undefined]) expect([orgId, (await api.get(`/components/${inOrg.sc}${orgId ? `?org_id=${orgId}` : ''}`)).status]).toEqual([orgId, 200]);
    expect(failures).toEqual([]);
    // Everything is as it was.
    for (const ids of [inOrg, personal]) {
      for (const path of [`/sources/${ids.dc}`, `/webhooks/${ids.wh}`, `/workflows/${ids.p}`]) {
        const res = await api.get(path);
        expect([path, res.status]).toEqual([path, 200]);
        expect([path, res.body.data.name]).not.toEqual([path, 'renamed']);
      }
    }
  });

  it('answers a resource of the org org_id names, and one without org_id wherever it is', async () => {
    const { inOrg, personal } = await fixtures();
    for (const op of ops.filter((o) => o.method === 'GET')) {
      for (const [ids, orgId] of [[inOrg, org1], [inOrg, undefined], [personal, undefined]] as const) {
        const res = await send(op, ids, orgId);
        expect([op.path, orgId, res.status]).toEqual([op.path, orgId, 200]);
      }
    }
  });

  it('deletes a subscription with org_id only when that org owns it', async () => {
    const { inOrg } = await fixtures();
    const made = await api.post(`/subscriptions?org_id=${org1}&emitter_id=${inOrg.dc}&listener_id=${inOrg.wh}`);
    expect(made.status).toBe(200);
    const query = `emitter_id=${inOrg.dc}&listener_id=${inOrg.wh}&event_name=`;
    const other = await api.del(`/subscriptions?org_id=${org2}&${query}`);
    expect([other.status, other.body?.code]).toEqual([404, 'not_found']);
    expect((await api.get(`/orgs/${org1}/subscriptions`)).body.data).toHaveLength(1);
    expect((await api.del(`/subscriptions?org_id=${org1}&${query}`)).status).toBe(204);
    expect((await api.get(`/orgs/${org1}/subscriptions`)).body.data).toHaveLength(0);
  });
});
