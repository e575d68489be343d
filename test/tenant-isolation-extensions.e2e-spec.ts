import { admin, client, createUser, TestUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { Receiver, streamEnds, subscriptionsLoaded } from './events.helpers';
import { rawRequest } from './support/raw-http';

/**
 * A hostile tenant (A) against another (B) on the surfaces added last: workflows and their event
 * lists, streams, runs and replays; subscriptions with `p_` ids and `p_*` globs; app hooks; usage per
 * day; workflow HTTP triggers. Every probe must answer as if B's resources did not exist, in the
 * error shape `{ error, code }`, and change nothing of B's.
 */
const EMIT = `export default defineComponent({
  async run({ steps, $ }) { $.send.emit({ raw_event: { private: "b-only", n: steps.trigger.event.n } }); },
});`;
const OK = 'export default { async run() { return 1; } };';
const HOOK = 'export default { name: "Hooked", version: "1", props: { github: { type: "app", app: "github" }, hook: { type: "$.interface.apphook", appProp: "github", eventNames: ["push"] } }, async run(e) { this.$emit(e) } };';
const MAX_BODY = 4096;

type Res = { status: number; body: unknown; text: string };

/** A refusal: the status, and the error shape with no stack trace in it. */
function expectRefused(res: Res, status: number, code?: string): void {
  expect([res.status, res.body]).toEqual([status, expect.objectContaining({ error: expect.any(String), code: code ?? expect.any(String) })]);
  expect(res.text).not.toMatch(/\n\s+at .+:\d+:\d+/);
}

describe('tenant isolation of workflows, subscriptions, app hooks and usage', () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;
  let wfB: { id: string; deployment_id: string; steps: { component_id: string }[] };
  let httpB: { id: string; trigger: { endpoint_url: string } };
  let wfA: { id: string };
  let hookSourceB: string;
  let sourceB: string;
  const receivers: Receiver[] = [];

  const as = (u: TestUser) => client(system, u.apiKey);
  const workflow = (name: string, trigger: Record<string, unknown> = { manual: {} }, code = EMIT) => ({ name, trigger, steps: [{ name: 'emit', code }] });
  const receiver = async () => {
    const r = await new Receiver().start();
    receivers.push(r);
    return r;
  };

  beforeAll(async () => {
    system = await startSystem({ SSE_KEEPALIVE_MS: '300', HTTP_MAX_BODY_BYTES: String(MAX_BODY), DELIVERY_METRICS_PORT: String(await freePort()) });
    a = createUser(system);
    b = createUser(system);
    wfB = (await as(b).post('/workflows', { ...workflow('b-flow'), secrets: { TOKEN: 'b-secret-value' } })).body.data;
    httpB = (await as(b).post('/workflows', workflow('b-http', { http: {} }, OK))).body.data;
    wfA = (await as(a).post('/workflows', workflow('a-flow'))).body.data;
    const hookComponent = (await as(b).post('/components', { component_code: HOOK })).body.data.id;
    hookSourceB = (await as(b).post('/sources', { component_id: hookComponent })).body.data.id;
    sourceB = (await as(b).post('/sources', { component_code: 'module.exports = { name: "Plain", version: "1", props: { http: "$.interface.http" }, async run() {} };' })).body.data.id;
    expect([wfB?.id, httpB?.id, wfA?.id, hookSourceB, sourceB]).toEqual([expect.stringMatching(/^p_/), expect.stringMatching(/^p_/), expect.stringMatching(/^p_/), expect.stringMatching(/^dc_/), expect.stringMatching(/^dc_/)]);
  });
  afterAll(async () => {
    for (const r of receivers) await r.stop();
    await system?.stop();
  });

  it("answers 404 for every route of another tenant's workflow and changes nothing", async () => {
    const id = wfB.id;
    const probes: [string, () => Promise<Res>][] = [
      ['get', () => as(a).get(`/workflows/${id}`)],
      ['put', () => as(a).put(`/workflows/${id}`, workflow('taken-over', { manual: {} }, OK))],
      ['run', () => as(a).post(`/workflows/${id}/run`, { event: { n: 1 } })],
      ['replay', () => as(a).post(`/workflows/${id}/replay`, { event_id: '1700000000000-0' })],
      ['runs', () => as(a).get(`/workflows/${id}/runs`)],
      ['emits', () => as(a).get(`/workflows/${id}/event_summaries`)],
      ['errors', () => as(a).get(`/workflows/${id}/$errors/event_summaries`)],
      ['errors encoded', () => as(a).get(`/workflows/${id}/%24errors/event_summaries`)],
      ['as a source', () => as(a).get(`/sources/${id}/event_summaries`)],
      ['delete', () => as(a).del(`/workflows/${id}`)],
      ['org list', () => as(a).get(`/orgs/${b.id}/workflows`)],
      ['create in B', () => as(a).post(`/workflows?org_id=${b.id}`, workflow('planted'))],
      ['create in B (body)', () => as(a).post('/workflows', { ...workflow('planted'), org_id: b.id })],
    ];
    for (const [what, probe] of probes) {
      const res = await probe();
      expect([what, res.status]).toEqual([what, 404]);
      expectRefused(res, 404, 'not_found');
      expect(res.text).not.toContain('b-flow');
    }
    for (const kind of ['emits', 'observations', 'sse']) {
      const res = await fetch(`${system.origin}/sse/p/${id}/${kind}`, { headers: { authorization: `Bearer ${a.apiKey}` } });
      expect([kind, res.status, ((await res.json()) as { code: string }).code]).toEqual([kind, 404, 'not_found']);
    }
    expect((await as(a).get('/users/me/workflows')).body.data.map((w: { id: string }) => w.id)).toEqual([wfA.id]);
    const still = await as(b).get(`/workflows/${id}`);
    expect([still.status, still.body.data.name, still.body.data.deployment_id, still.body.data.active]).toEqual([200, 'b-flow', wfB.deployment_id, true]);
    expect((await as(b).get(`/workflows/${id}/runs`)).body.data).toEqual([]);
  });

  it("refuses another tenant's sources, workflows and step components inside a workflow definition", async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['events trigger on B', { ...workflow('x1'), trigger: { events: { emitter_id: wfB.id, event_name: '$errors' } } }, 'trigger.events.emitter_id'],
      ['source trigger on B', { ...workflow('x2'), trigger: { source: sourceB } }, 'trigger.source'],
      ["B's step component", { name: 'x3', trigger: { manual: {} }, steps: [{ name: 's', action: wfB.steps[0].component_id }] }, 'steps[0].action'],
      ["B's component as an inline trigger source", { ...workflow('x4'), trigger: { source: { component_id: wfB.steps[0].component_id } } }, 'trigger.source'],
    ];
    for (const [what, body, path] of cases) {
      const res = await as(a).post('/workflows', body);
      expect([what, res.status, res.body?.code, res.body?.details?.path]).toEqual([what, 400, 'invalid_workflow', path]);
    }
    // A refused definition is not stored: A still has only its own workflow, and a retry is refused the same way (not 409).
    expect((await as(a).get('/users/me/workflows')).body.data.map((w: { id: string }) => w.id)).toEqual([wfA.id]);
    expect((await as(a).post('/workflows', cases[1][1])).status).toBe(400);
    // Not planted by a later deploy either, and the refused deploy leaves the stored definition as it was.
    const before = (await as(a).get(`/workflows/${wfA.id}`)).body.data;
    const put = await as(a).put(`/workflows/${wfA.id}`, { ...workflow('a-flow'), trigger: { events: { emitter_id: wfB.id } } });
    expect([put.status, put.body.details]).toEqual([400, { path: 'trigger.events.emitter_id' }]);
    const putSource = await as(a).put(`/workflows/${wfA.id}`, { ...workflow('a-flow'), trigger: { source: sourceB } });
    expect([putSource.status, putSource.body.details]).toEqual([400, { path: 'trigger.source' }]);
    expect((await as(a).get(`/workflows/${wfA.id}`)).body.data).toEqual(before);
    expect((await as(b).get('/users/me/subscriptions')).body.data).toEqual([]);
  });

  it("runs a copy of a member's own action in an org's workflow: every member reads and redeploys it, also after that member left", async () => {
    const org = admin(system, ['orgs', 'create', '--name', 'Steps Org', '--orgname', `steps-${b.id.slice(2, 12).toLowerCase()}`]);
    const c = createUser(system);
    for (const u of [b, c]) admin(system, ['orgs', 'add-member', '--org', org.id, '--user', u.id]);
    const ACTION = 'export default { name: "b-own", version: "0.0.1", type: "action", props: { x: { type: "string" } }, async run({ $ }) { return "got " + this.x; } };';
    const own: string = (await as(b).post('/components', { component_code: ACTION })).body.data.id;
    const def = (x: string) => ({ name: 'org-steps', trigger: { manual: {} }, steps: [{ name: 's', action: own, props: { x } }] });
    const wf = (await as(b).post(`/workflows?org_id=${org.id}`, def('one'))).body.data;
    expect(wf.steps[0]).toEqual(expect.objectContaining({ action: own, component_id: expect.not.stringMatching(own) }));
    const copy: string = wf.steps[0].component_id;
    expect((await as(c).get(`/components/${copy}`)).body.data).toEqual(expect.objectContaining({ id: copy, code: ACTION }));
    admin(system, ['orgs', 'remove-member', '--org', org.id, '--user', b.id]);
    const redeployed = await as(c).put(`/workflows/${wf.id}`, def('two'));
    expect([redeployed.status, redeployed.body.data?.steps?.[0]?.component_id]).toEqual([200, copy]);
    expect((await as(c).post(`/workflows/${wf.id}/run`, {})).status).toBe(202);
    const [run] = await eventually(async () => (await as(c).get(`/workflows/${wf.id}/runs`)).body.data?.length && (await as(c).get(`/workflows/${wf.id}/runs`)).body.data, { what: 'the run', timeoutMs: 30_000 });
    expect(run.steps[0].return_value).toBe('got two');
    // C still cannot name B's own component in a new step of its own.
    expect((await as(c).post('/workflows', { ...def('x'), name: 'c-steps' })).status).toBe(400);
  });

  it("cannot subscribe to another tenant's workflow, make it a listener, or catch its events with p_*", async () => {
    const mine = await receiver();
    const theirs = await receiver();
    const hookA = (await as(a).post('/webhooks', { url: mine.url })).body.data.id;
    const hookB = (await as(b).post('/webhooks', { url: theirs.url })).body.data.id;
    const q = (emitter: string, listener: string, event = '') => `emitter_id=${emitter}&listener_id=${listener}&event_name=${encodeURIComponent(event)}`;
    for (const [what, res] of [
      ['B emits to A', await as(a).post(`/subscriptions?${q(wfB.id, hookA)}`)],
      ['B errors to A', await as(a).post(`/subscriptions?${q(wfB.id, hookA, '$errors')}`)],
      ['A emits to B', await as(a).post(`/subscriptions?${q(wfA.id, wfB.id)}`)],
      ['auto to B', await as(a).post(`/auto_subscriptions?event_name=%24errors&listener_id=${wfB.id}`)],
      ['glob in B', await as(a).post(`/subscriptions?${q('p_*', hookA)}&org_id=${b.id}`)],
    ] as [string, Res][]) {
      expect([what, res.status]).toEqual([what, 404]);
      expectRefused(res, 404);
    }
    // A's own glob covers A's workflows only.
    expect((await as(a).post(`/subscriptions?${q('p_*', hookA)}`)).status).toBe(200);
    expect((await as(b).post(`/subscriptions?${q(wfB.id, hookB)}`)).status).toBe(200);
    await subscriptionsLoaded(system);
    expect((await as(b).post(`/workflows/${wfB.id}/run`, { event: { n: 7 } })).status).toBe(202);
    expect((await as(a).post(`/workflows/${wfA.id}/run`, { event: { n: 8 } })).status).toBe(202);
    await eventually(async () => theirs.received.length > 0 && mine.received.length > 0, { what: 'both deliveries', timeoutMs: 30_000 });
    // Emitted and routed in the same way at the same time: had B's event matched A's glob, it would be here too.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(mine.received.map((r) => [r.headers['x-pd-emitter-id'], /"n":(\d+)/.exec(r.body)?.[1]])).toEqual([[wfA.id, '8']]);
    expect(theirs.received.map((r) => [r.headers['x-pd-emitter-id'], /"n":(\d+)/.exec(r.body)?.[1]])).toEqual([[wfB.id, '7']]);
    // A cannot remove B's subscription.
    expectRefused(await as(a).del(`/subscriptions?${q(wfB.id, hookB)}`), 404);
    expect((await as(b).get('/users/me/subscriptions')).body.data).toEqual([expect.objectContaining({ emitter_id: wfB.id, listener_id: hookB })]);
  });

  it('feeds app hooks to the caller\'s own sources only and checks the body', async () => {
    expectRefused(await as(a).post(`/sources/${hookSourceB}/app_hook`, { event: { x: 1 } }), 404, 'not_found');
    expectRefused(await as(a).post(`/apps/github/hook_events?org_id=${b.id}`, { event_name: 'push', event: {} }), 404, 'not_found');
    const channel = await as(a).post('/apps/github/hook_events', { event_name: 'push', event: { x: 1 } });
    expect([channel.status, channel.body]).toEqual([202, { data: { delivered: [] } }]);
    const own = (body: unknown) => as(b).post(`/sources/${hookSourceB}/app_hook`, body);
    for (const bad of [undefined, [], { event: 'x' }, { event: [1] }, {}, { event_name: 5, event: {} }, { event_name: '', event: {} }, { event: {}, extra: 1 }]) {
      const res = await own(bad);
      expect([JSON.stringify(bad), res.status]).toEqual([JSON.stringify(bad), 400]);
      expectRefused(res, 400);
    }
    expectRefused(await own({ event: { big: 'x'.repeat(MAX_BODY) } }), 413);
    expectRefused(await own({ event_name: 'pull', event: {} }), 400, 'unknown_event_name');
    expectRefused(await as(b).post(`/sources/${sourceB}/app_hook`, { event: {} }), 400, 'no_app_hook');
    expectRefused(await as(b).post('/apps/Git%20Hub!/hook_events', { event_name: 'push', event: {} }), 400);
    expectRefused(await as(b).post(`/apps/${'a'.repeat(101)}/hook_events`, { event_name: 'push', event: {} }), 400);
    expect((await own({ event_name: 'push', event: { ok: true } })).status).toBe(202);
  });

  it("shows usage per day of the caller and their orgs only, and checks days", async () => {
    const org = admin(system, ['orgs', 'create', '--name', 'B Org', '--orgname', `b-org-${b.id.slice(2, 12).toLowerCase()}`]);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', b.id]);
    expect((await as(b).get(`/orgs/${org.id}/usage`)).status).toBe(200);
    for (const path of [`/orgs/${org.id}/usage`, `/orgs/${b.id}/usage`, '/orgs/o_nope/usage']) expectRefused(await as(a).get(path), 404, 'not_found');
    for (const days of ['0', '-1', 'abc', '1.5', '100000', '', '7&days=8']) expectRefused(await as(a).get(`/users/me/usage?days=${days}`), 400);
    const mine = await as(a).get('/users/me/usage?days=2');
    expect([mine.status, mine.body.data.owner_id]).toEqual([200, a.id]);
  });

  it('answers malformed, oversized and wrong-typed workflow input with 4xx and the error shape', async () => {
    const id = wfA.id;
    const base = workflow('malformed');
    const probes: [string, () => Promise<Res>, number][] = [
      ['array body', () => as(a).post('/workflows', []), 400],
      ['string body', () => as(a).post('/workflows', 'x'), 400],
      ['no body', () => as(a).post('/workflows'), 400],
      ['name type', () => as(a).post('/workflows', { ...base, name: 5 }), 400],
      ['empty name', () => as(a).post('/workflows', { ...base, name: '' }), 400],
      ['two triggers', () => as(a).post('/workflows', { ...base, trigger: { http: {}, manual: {} } }), 400],
      ['steps type', () => as(a).post('/workflows', { ...base, steps: 'x' }), 400],
      ['51 steps', () => as(a).post('/workflows', { ...base, steps: Array.from({ length: 51 }, (_, i) => ({ name: `s${i}`, code: OK })) }), 400],
      ['secrets array', () => as(a).post('/workflows', { ...base, secrets: ['x'] }), 400],
      ['secret name', () => as(a).post('/workflows', { ...base, secrets: { 'bad-name': 'x' } }), 400],
      ['secret value', () => as(a).post('/workflows', { ...base, secrets: { X: 5 } }), 400],
      ['secret __proto__', () => as(a).post('/workflows', { ...base, secrets: JSON.parse('{"__proto__": "x"}') }), 400],
      ['org_id type', () => as(a).post('/workflows', { ...base, org_id: 5 }), 400],
      ['put no body', () => as(a).put(`/workflows/${id}`), 400],
      ['run array', () => as(a).post(`/workflows/${id}/run`, [1]), 400],
      ['run oversized', () => as(a).post(`/workflows/${id}/run`, { event: 'x'.repeat(MAX_BODY + 1) }), 413],
      ['replay no id', () => as(a).post(`/workflows/${id}/replay`, {}), 400],
      ['replay id type', () => as(a).post(`/workflows/${id}/replay`, { event_id: 5 }), 400],
      ['replay long id', () => as(a).post(`/workflows/${id}/replay`, { event_id: 'x'.repeat(65) }), 400],
      ['replay unknown', () => as(a).post(`/workflows/${id}/replay`, { event_id: '1700000000000-0' }), 404],
      ['runs limit text', () => as(a).get(`/workflows/${id}/runs?limit=abc`), 400],
      ['runs limit 0', () => as(a).get(`/workflows/${id}/runs?limit=0`), 400],
      ['runs limit 101', () => as(a).get(`/workflows/${id}/runs?limit=101`), 400],
      ['summaries limit', () => as(a).get(`/workflows/${id}/event_summaries?limit=abc`), 400],
      ['summaries cursor', () => as(a).get(`/workflows/${id}/event_summaries?after=garbage`), 400],
      ['summaries event_name twice', () => as(a).get(`/workflows/${id}/event_summaries?event_name=a&event_name=b`), 400],
      ['$logs list', () => as(a).get(`/workflows/${id}/$logs/event_summaries`), 400],
      ['long id', () => as(a).get(`/workflows/${'p_'.padEnd(600, 'x')}`), 414],
      ['unknown id', () => as(a).get('/workflows/p_%27%20or%201=1--'), 404],
      ['bad org list', () => as(a).get('/orgs/o_nope/workflows'), 404],
    ];
    for (const [what, probe, status] of probes) {
      const res = await probe();
      expect([what, res.status]).toEqual([what, status]);
      expectRefused(res, status);
    }
    // A name every object inherits is not a secret that is set.
    const step = { name: 's', code: 'export default defineComponent({ props: { t: { type: "string" } }, async run() {} })', props: { t: '{{secrets.constructor}}' } };
    const inherited = await as(a).post('/workflows', { name: 'inherited', trigger: { manual: {} }, steps: [step] });
    expect([inherited.status, inherited.body.code, inherited.body.details?.path]).toEqual([400, 'invalid_workflow', 'secrets.constructor']);
    // A body over the API's limit is refused from its Content-Length, before it is read.
    const huge = await rawRequest(system.origin, `POST /v1/workflows HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.apiKey}\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n{"name":`);
    expectRefused({ status: huge.status, body: JSON.parse(huge.body), text: huge.body }, 413);
    const res = await fetch(`${system.origin}/sse/p/${id}/emits`, { headers: { authorization: `Bearer ${a.apiKey}`, 'last-event-id': 'garbage' } });
    expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([400, 'invalid_request']);
  });

  it("a workflow's HTTP trigger caps bodies, answers unknown methods in the error shape, and stops with the workflow", async () => {
    const url = httpB.trigger.endpoint_url;
    const ok = await eventually(async () => {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });
      return r.status === 200 ? r : undefined;
    }, { what: 'the HTTP trigger to answer' });
    expect(await ok.json()).toEqual({ success: true });
    const big = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ x: 'x'.repeat(MAX_BODY) }) });
    expect([big.status, ((await big.json()) as { code: string }).code]).toEqual([413, expect.any(String)]);
    // Every method Node's parser reads is the trigger's (PROPFIND is a request like POST); one it cannot read is Node's 400.
    const unknown = await fetch(url, { method: 'BREW' });
    expect(unknown.status).toBe(400);
    expect((await unknown.json()) as unknown).toEqual(expect.objectContaining({ error: expect.any(String), code: expect.any(String) }));
    // A cannot turn it off; B's delete ends it.
    expectRefused(await as(a).put(`/workflows/${httpB.id}`, { ...workflow('b-http', { http: {} }, OK), active: false }), 404);
    expect((await as(b).del(`/workflows/${httpB.id}`)).status).toBe(204);
    await eventually(async () => (await fetch(url, { method: 'POST', body: '{}' })).status === 404, { what: 'the endpoint of a deleted workflow to answer 404' });
  });

  it('a rotated key stops reaching workflows at once, and its open workflow stream ends', async () => {
    const c = createUser(system);
    const wf = (await as(c).post('/workflows', workflow('c-flow'))).body.data;
    const ac = new AbortController();
    const stream = await fetch(`${system.origin}/sse/p/${wf.id}/sse`, { headers: { authorization: `Bearer ${c.apiKey}` }, signal: ac.signal });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain(':sse-handshake');
    const rotated = admin(system, ['keys', 'rotate', '--user', c.id]);
    for (const res of [await as(c).get(`/workflows/${wf.id}`), await as(c).post(`/workflows/${wf.id}/run`, {}), await as(c).get(`/workflows/${wf.id}/event_summaries`)]) expectRefused(res, 401);
    expect((await client(system, rotated.api_key).get(`/workflows/${wf.id}`)).status).toBe(200);
    expect(await streamEnds(reader, ac, 20_000)).toBe(true);
  });
});
