import { admin, client, createUser, TestUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { Receiver, sql, subscriptionsLoaded } from './events.helpers';
import { DocOperation, Json, operationsOf } from './support/openapi-requests';
import { Attacker, Ids, Kind, Probe, probesOf } from './support/hostile-requests';

/**
 * A hostile tenant sweep. Account A holds one of every resource kind, personally and in an org; B (a
 * plain user, and a plain member of another org) calls every operation of the served OpenAPI document
 * with A's ids in each path parameter and each field that names a resource. Every such call answers
 * `404 not_found` (docs/api.md: other accounts' ids always answer 404), no answer carries anything of
 * A's that B did not send, and afterwards everything of A reads exactly as before. A member removed from
 * A's org is swept the same way on the very next request, and loses the routes they made while a member.
 */
const A_COMPONENT = `module.exports = {
  key: "a-private-hook", name: "A-PRIVATE-component", version: "1",
  props: {
    http: "$.interface.http",
    token: { type: "string", secret: true, label: "A-PRIVATE-label" },
    color: { type: "string", optional: true, async options() { return ["A-PRIVATE-option"]; } },
  },
  async run(e) { this.$emit({ marker: "A-EVENT-" + ((e.body && e.body.n) || 0) }, { summary: "A-EVENT-summary" }); },
};`;
const A_TIMER = 'module.exports = { name: "A-PRIVATE-timer", version: "1", props: { timer: { type: "$.interface.timer", default: { cron: "0 0 1 1 *" } } }, async run() { this.$emit({ marker: "A-EVENT-timer" }); } };';
const A_HOOK = 'module.exports = { name: "A-PRIVATE-apphook", version: "1", props: { github: { type: "app", app: "github" }, hook: { type: "$.interface.apphook", appProp: "github", eventNames: ["push"] } }, async run(e) { this.$emit(e); } };';
const A_STEP = `export default defineComponent({
  async run({ steps, $ }) {
    $.send.emit({ raw_event: { marker: "A-EVENT-wf" } });
    if (steps.trigger.event.fail) throw new Error("A-EVENT-failure");
  },
});`;
const B_COMPONENT = 'module.exports = { name: "b-component", version: "1", props: { http: "$.interface.http", greeting: { type: "string", optional: true, options: ["hi"] } }, async run() {} };';
const B_STEP = 'export default { async run() { return 1; } };';

type Res = { status: number; text: string; body: Json | undefined };

describe('a hostile tenant against every route', () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;
  let m: TestUser;
  let orgA: string;
  let orgB: string;
  let doc: Json;
  let ops: DocOperation[];
  const receivers: Receiver[] = [];
  /** Everything of A's: ids, keys, secrets. */
  const secretsOfA: string[] = [];
  const victim: Ids = { dc: [], p: [], wh: [], sc: [], o: [] };
  const orgOnly: Ids = { dc: [], p: [], wh: [], sc: [], o: [] };
  let primary: Record<Kind, string>;
  let own: Record<string, string>;
  let endpointKeys: string[];
  let aReceiver: Receiver;
  let bReceiver: Receiver;
  let mReceiver: Receiver;

  const as = (u: TestUser) => client(system, u.apiKey);
  const ok = <T>(res: { status: number; body: { data?: T } | undefined; text: string }, what: string): T => {
    if (res.status >= 300 || !res.body?.data) throw new Error(`${what}: ${res.status} ${res.text}`);
    return res.body.data;
  };
  const receiver = async () => {
    const r = await new Receiver().start();
    receivers.push(r);
    return r;
  };

  /** One request; an event stream is read to its first message and dropped. */
  const send = async (key: string, p: { method: string; path: string; query?: Record<string, string>; body?: unknown }): Promise<Res> => {
    const qs = new URLSearchParams(p.query ?? {}).toString();
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), 20_000);
    try {
      const res = await fetch(`${system.origin}${p.path}${qs ? `?${qs}` : ''}`, {
        method: p.method,
        headers: { authorization: `Bearer ${key}`, ...(p.body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: p.body !== undefined ? JSON.stringify(p.body) : undefined,
        signal: ac.signal,
      });
      let text = '';
      if (res.headers.get('content-type')?.startsWith('text/event-stream')) {
        const reader = res.body!.getReader();
        text = new TextDecoder().decode((await reader.read()).value);
        ac.abort();
      } else text = await res.text();
      let body: Json | undefined;
      try {
        body = text ? (JSON.parse(text) as Json) : undefined;
      } catch {
        body = undefined;
      }
      return { status: res.status, text, body };
    } finally {
      clearTimeout(timer);
    }
  };

  /** What of A's an answer shows that the request did not carry. */
  const leaked = (text: string, sent: string[]): string[] => secretsOfA.filter((s) => text.includes(s) && !sent.some((x) => x.includes(s))).concat(/A-(PRIVATE|SECRET|EVENT)/.test(text) ? ['an A-… marker'] : []);

  /** Everything A can read, plus every subscription row that names one of A's ids (whoever owns it). */
  const snapshotOfA = async (): Promise<Json> => {
    const paths = [
      '/users/me', '/users/me/usage?days=2', `/orgs/${orgA}/usage?days=2`,
      ...['sources', 'webhooks', 'workflows'].flatMap((k) => [`/users/me/${k}?limit=100`, `/orgs/${orgA}/${k}?limit=100`]),
      '/users/me/subscriptions', `/orgs/${orgA}/subscriptions`,
      ...victim.dc.flatMap((id) => [`/sources/${id}`, `/sources/${id}/event_summaries?limit=100&expand=event`, `/sources/${id}/event_summaries?event_name=%24errors`]),
      ...victim.p.flatMap((id) => [`/workflows/${id}`, `/workflows/${id}/runs`, `/workflows/${id}/event_summaries?expand=event`, `/workflows/${id}/$errors/event_summaries`]),
      ...victim.wh.flatMap((id) => [`/webhooks/${id}`, `/webhooks/${id}/deliveries?limit=100`]),
      ...victim.sc.map((id) => `/components/${id}`),
    ];
    const out: Json = {};
    for (const path of paths) {
      const res = await as(a).get(path);
      out[path] = [res.status, res.body];
    }
    const all = Object.values(victim).flat();
    out.subscriptions = await sql(system, 'select * from subscriptions where emitter_id = any($1) or listener_id = any($1) or owner_id = any($2) order by id', [all, [a.id, orgA]]);
    out.auto = await sql(system, 'select * from auto_subscriptions where listener_id = any($1) or owner_id = any($2) order by id', [all, [a.id, orgA]]);
    out.members = await sql(system, 'select org_id, user_id from org_members where org_id = $1 order by user_id', [orgA]);
    out.keys = await sql(system, 'select id, user_id, revoked_at from api_keys where user_id = $1 order by id', [a.id]).catch(() => 'no api_keys table');
    return out;
  };

  /** Sends every probe of every operation as `key`; returns the failures (an empty list passes). */
  const sweep = async (key: string, attacker: Attacker, targets: Ids, first: Record<Kind, string>): Promise<string[]> => {
    const failures: string[] = [];
    let hostileCount = 0;
    for (const op of ops) {
      for (const probe of probesOf(op, attacker, targets, first)) {
        // The attacker's own writes would change their fixtures; their own reads show what a list leaks.
        if (!probe.hostile && op.method !== 'GET') continue;
        const res = await send(key, probe);
        const bad = check(probe, res);
        if (bad) failures.push(`${probe.label}: ${bad} → ${res.status} ${res.text.slice(0, 300)}`);
        if (probe.hostile) hostileCount++;
        if (probe.hostile && op.method === 'GET') {
          const head = await send(key, { ...probe, method: 'HEAD' });
          if (head.status !== 404 && !probe.op.public) failures.push(`HEAD ${probe.label}: ${head.status}`);
        }
      }
    }
    expect(hostileCount).toBeGreaterThan(100);
    return failures;
  };

  const check = (probe: Probe, res: Res): string | undefined => {
    const leak = leaked(res.text, probe.sent);
    if (leak.length) return `leaks ${leak.join(', ')}`;
    if (res.status >= 500) return 'server error';
    if (!probe.op.statuses.includes(res.status)) return `undocumented status (documented: ${probe.op.statuses.join(',')})`;
    if (probe.op.public) return undefined;
    if (probe.hostile && (res.status !== 404 || res.body?.code !== 'not_found')) return 'expected 404 not_found';
    // The registry is off here: the attacker's own registry read is a 404 like any unknown key.
    if (!probe.hostile && res.status >= 300 && !(res.status === 404 && probe.op.path.includes('/registry/'))) return 'own request refused';
    return undefined;
  };

  beforeAll(async () => {
    system = await startSystem({ REGISTRY_DIR: 'off', SSE_KEEPALIVE_MS: '300', DELIVERY_METRICS_PORT: String(await freePort()) });
    [a, b, m] = [createUser(system), createUser(system), createUser(system)];
    const tag = a.id.slice(2, 10).toLowerCase();
    orgA = admin(system, ['orgs', 'create', '--name', 'A-PRIVATE-org', '--orgname', `a-org-${tag}`]).id;
    orgB = admin(system, ['orgs', 'create', '--name', 'B org', '--orgname', `b-org-${tag}`]).id;
    const orgM = admin(system, ['orgs', 'create', '--name', 'M org', '--orgname', `m-org-${tag}`]).id;
    admin(system, ['orgs', 'add-member', '--org', orgA, '--user', a.id]);
    admin(system, ['orgs', 'add-member', '--org', orgA, '--user', m.id]);
    admin(system, ['orgs', 'add-member', '--org', orgB, '--user', b.id]);
    admin(system, ['orgs', 'add-member', '--org', orgM, '--user', m.id]);
    [aReceiver, bReceiver, mReceiver] = [await receiver(), await receiver(), await receiver()];

    // A: personal resources of every kind.
    const scA = ok<Json>(await as(a).post('/components', { component_code: A_COMPONENT }), 'A component');
    const http = ok<Json>(await as(a).post('/sources', { component_id: scA.id, name: 'A-PRIVATE-http', configured_props: { token: 'A-SECRET-token' } }), 'A http source');
    const timer = ok<Json>(await as(a).post('/sources', { component_code: A_TIMER, name: 'A-PRIVATE-timer' }), 'A timer source');
    const hook = ok<Json>(await as(a).post('/sources', { component_code: A_HOOK, name: 'A-PRIVATE-hook' }), 'A app hook source');
    const whA = ok<Json>(await as(a).post('/webhooks', { url: aReceiver.url, name: 'A-PRIVATE-webhook' }), 'A webhook');
    const wfA = ok<Json>(await as(a).post('/workflows', { name: 'A-PRIVATE-flow', trigger: { http: {} }, steps: [{ name: 'emit', code: A_STEP }], secrets: { TOKEN: 'A-SECRET-wf' } }), 'A workflow');
    ok(await as(a).post(`/subscriptions?emitter_id=${http.id}&listener_id=${whA.id}`), 'A subscription');
    ok(await as(a).post(`/subscriptions?emitter_id=${wfA.id}&listener_id=${whA.id}`), 'A workflow subscription');
    ok(await as(a).post(`/auto_subscriptions?event_name=%24errors&listener_id=${whA.id}`), 'A auto-subscription');
    // A: the same inside A's org.
    const scOrg = ok<Json>(await as(a).post(`/components?org_id=${orgA}`, { component_code: A_COMPONENT }), 'org component');
    const dcOrg = ok<Json>(await as(a).post(`/sources?org_id=${orgA}`, { component_id: scOrg.id, name: 'A-PRIVATE-org-source', configured_props: { token: 'A-SECRET-org' } }), 'org source');
    const whOrg = ok<Json>(await as(a).post(`/webhooks?org_id=${orgA}`, { url: aReceiver.url, name: 'A-PRIVATE-org-webhook' }), 'org webhook');
    const wfOrg = ok<Json>(await as(a).post(`/workflows?org_id=${orgA}`, { name: 'A-PRIVATE-org-flow', trigger: { manual: {} }, steps: [{ name: 'emit', code: A_STEP }] }), 'org workflow');
    ok(await as(a).post(`/subscriptions?org_id=${orgA}&emitter_id=${dcOrg.id}&listener_id=${whOrg.id}`), 'org subscription');

    // M, while a member of A's org, routes its events to their own webhooks: personal, and of another org of theirs.
    const whM = ok<Json>(await as(m).post('/webhooks', { url: mReceiver.url }), 'M webhook');
    const whMOrg = ok<Json>(await as(m).post(`/webhooks?org_id=${orgM}`, { url: mReceiver.url }), 'M org webhook');
    ok(await as(m).post(`/subscriptions?emitter_id=${dcOrg.id}&listener_id=${whM.id}`), 'M personal route');
    ok(await as(m).post(`/subscriptions?org_id=${orgM}&emitter_id=${dcOrg.id}&listener_id=${whMOrg.id}`), 'M org-to-org route');

    // B: their own resources, the baseline of every probe.
    const scB = ok<Json>(await as(b).post('/components', { component_code: B_COMPONENT }), 'B component');
    const dcB = ok<Json>(await as(b).post('/sources', { component_id: scB.id }), 'B source');
    const dcB2 = ok<Json>(await as(b).post('/sources', { component_id: scB.id }), 'B second source');
    const whB = ok<Json>(await as(b).post('/webhooks', { url: bReceiver.url }), 'B webhook');
    const wfB = ok<Json>(await as(b).post('/workflows', { name: 'b-flow', trigger: { manual: {} }, steps: [{ name: 's', code: B_STEP }] }), 'B workflow');
    own = { dc: String(dcB.id), dc2: String(dcB2.id), wh: String(whB.id), p: String(wfB.id), sc: String(scB.id), o: orgB };

    // Events, errors and deliveries of A's.
    const endpoint = (s: Json) => String((s.configured_props as { http: { endpoint_url: string } }).http.endpoint_url);
    const wfEndpoint = String((wfA.trigger as { endpoint_url: string }).endpoint_url);
    endpointKeys = [endpoint(http), endpoint(dcOrg), wfEndpoint].map((u) => u.split('/e/')[1]);
    await subscriptionsLoaded(system);
    for (const url of [endpoint(http), endpoint(dcOrg)]) expect((await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' })).status).toBeLessThan(300);
    expect((await as(a).post(`/workflows/${wfA.id}/run`, { event: { n: 2 } })).status).toBe(202);
    expect((await as(a).post(`/workflows/${wfA.id}/run`, { event: { fail: true } })).status).toBe(202);
    await eventually(async () => (await as(a).get(`/workflows/${wfA.id}/$errors/event_summaries`)).body?.data?.length > 0, { what: "A's workflow error", timeoutMs: 60_000 });
    await eventually(async () => (await as(a).get(`/sources/${dcOrg.id}/event_summaries`)).body?.data?.length > 0, { what: "A's org source event", timeoutMs: 60_000 });
    await eventually(async () => (await as(a).get(`/webhooks/${whA.id}/deliveries`)).body?.data?.length >= 2, { what: "A's deliveries", timeoutMs: 60_000 }).catch(async (e) => {
      throw new Error(`${(e as Error).message}: ${(await as(a).get(`/webhooks/${whA.id}/deliveries`)).text} ${aReceiver.received.length}`);
    });
    await eventually(async () => mReceiver.received.length >= 2, { what: "M's routes while a member", timeoutMs: 30_000 });

    Object.assign(victim, {
      dc: [http.id, timer.id, hook.id, dcOrg.id],
      p: [wfA.id, wfOrg.id],
      wh: [whA.id, whOrg.id],
      sc: [scA.id, scOrg.id, 'a-private-hook', ...(wfA.steps as Json[]).map((s) => s.component_id)],
      o: [orgA, a.id],
    });
    Object.assign(orgOnly, { dc: [dcOrg.id], p: [wfOrg.id], wh: [whOrg.id], sc: [scOrg.id], o: [orgA] });
    primary = { dc: String(http.id), p: String(wfA.id), wh: String(whA.id), sc: String(scA.id), o: orgA };
    secretsOfA.push(
      ...Object.values(victim).flat().map(String), ...endpointKeys, String(whA.secret), String(whOrg.secret),
      String(wfA.deployment_id), ...(wfA.steps as Json[]).map((s) => String(s.cell_id)),
    );
    doc = (await (await fetch(`${system.baseUrl}/openapi.json`)).json()) as Json;
    ops = operationsOf(doc);
  }, 300_000);

  afterAll(async () => {
    for (const r of receivers) await r.stop();
    await system?.stop();
  });

  /** B's own value for each parameter and field. */
  const ownValue = (u: Record<string, string>) => (op: DocOperation, name: string): unknown => {
    const path = op.path;
    switch (name) {
      case 'id': return path.includes('/workflows/') || path.startsWith('/sse/p/') ? u.p : path.includes('/webhooks/') ? u.wh : u.dc;
      case 'keyOrId': return u.sc;
      case 'key': return 'no-such-registry-key';
      case 'org_id': return op.parameters.some((p) => p.in === 'path' && p.name === 'org_id') ? u.o : undefined;
      case 'prop': return 'greeting';
      case 'app': return 'github';
      case 'channel': return '$errors';
      case 'component_id': return u.sc;
      case 'source_id': return path.includes('/components/') ? u.dc : undefined;
      case 'emitter_id': return u.dc2;
      case 'listener_id': return u.wh;
      case 'event_name': return path.includes('auto_subscriptions') ? '$errors' : path.includes('hook') ? 'push' : path.includes('subscriptions') ? '' : undefined;
      case 'event': return path.includes('hook') ? {} : undefined;
      case 'event_id': return '1700000000000-0';
      case 'url': return bReceiver.url;
      case 'name': return path.includes('workflows') ? 'b-flow' : undefined;
      case 'trigger': return { manual: {} };
      case 'steps': return [{ name: 's', code: B_STEP }];
      default: return undefined;
    }
  };

  it('serves a document with every kind of route, and none that manages keys or members', () => {
    const paths = Object.keys(doc.paths as Json);
    for (const p of ['/v1/sources/{id}', '/v1/subscriptions', '/v1/webhooks/{id}', '/v1/workflows/{id}', '/sse/dc/{id}/emits', '/sse/p/{id}/sse', '/v1/orgs/{org_id}/sources']) expect(paths).toContain(p);
    expect(paths.filter((p) => /key|member|invite|role/i.test(p.replace('{keyOrId}', '').replace('{key}', '')))).toEqual([]);
  });

  it("answers 404 to every route called with A's ids, leaks nothing, and changes nothing of A's", async () => {
    const before = await eventually(async () => {
      const x = await snapshotOfA();
      await new Promise((r) => setTimeout(r, 1_000));
      return JSON.stringify(x) === JSON.stringify(await snapshotOfA()) ? x : undefined;
    }, { what: "A's state to settle", timeoutMs: 60_000 });
    // The owner reaches what is swept (so the 404s below are about ownership, not wrong ids).
    for (const path of [`/v1/sources/${primary.dc}`, `/v1/workflows/${primary.p}`, `/v1/webhooks/${primary.wh}`, `/v1/components/${primary.sc}`, `/sse/dc/${primary.dc}/emits`, `/sse/p/${primary.p}/sse`]) {
      expect([path, (await send(a.apiKey, { method: 'GET', path })).status]).toEqual([path, 200]);
    }

    const failures = await sweep(b.apiKey, { own: ownValue(own), org: orgB }, victim, primary);

    // Workflow definitions naming A's resources: refused as an invalid definition (docs/workflows.md).
    const defs: [string, Json][] = [
      ['step action', { steps: [{ name: 's', action: primary.sc }] }],
      ['step action by key', { steps: [{ name: 's', action: 'a-private-hook' }] }],
      ['step action (workflow step component)', { steps: [{ name: 's', action: victim.sc[3] }] }],
      ['source trigger', { trigger: { source: primary.dc } }],
      ['org source trigger', { trigger: { source: victim.dc[3] } }],
      ['events trigger', { trigger: { events: { emitter_id: primary.p, event_name: '' } } }],
      ['errors trigger', { trigger: { events: { emitter_id: victim.dc[0], event_name: '$errors' } } }],
      ['inline source component', { trigger: { source: { component_id: primary.sc, props: { token: 'x' } } } }],
      ['inline source key', { trigger: { source: { key: 'a-private-hook', props: { token: 'x' } } } }],
    ];
    for (const [what, change] of defs) {
      const body = { name: `b-probe-${what.replace(/\W/g, '-')}`, trigger: { manual: {} }, steps: [{ name: 's', code: B_STEP }], ...change };
      for (const [method, path] of [['POST', '/v1/workflows'], ['PUT', `/v1/workflows/${own.p}`]]) {
        const res = await send(b.apiKey, { method, path, body: method === 'PUT' ? { ...body, name: 'b-flow' } : body });
        const leak = leaked(res.text, JSON.stringify(change).match(/[a-z]+_[A-Za-z0-9]+|a-private-hook/g) ?? []);
        if (res.status !== 400 || res.body?.code !== 'invalid_workflow' || leak.length) failures.push(`${method} workflow ${what}: ${res.status} ${res.text.slice(0, 200)}`);
      }
    }
    // No route manages keys or members; guessed ones are plain 404s.
    for (const [method, path, body] of [
      ['POST', `/v1/orgs/${orgA}/members`, { user_id: b.id }], ['PUT', `/v1/orgs/${orgA}/members/${b.id}`, {}], ['GET', `/v1/orgs/${orgA}/members`],
      ['GET', `/v1/orgs/${orgA}`], ['GET', `/v1/users/${a.id}`], ['GET', `/v1/users/${a.id}/keys`], ['POST', `/v1/users/${a.id}/keys/rotate`, {}],
      ['DELETE', `/v1/users/${a.id}/keys`], ['GET', '/v1/keys'], ['POST', '/v1/keys', {}],
    ] as [string, string, Json?][]) {
      const res = await send(b.apiKey, { method, path, body });
      if (res.status !== 404 || leaked(res.text, [orgA, a.id]).length) failures.push(`${method} ${path}: ${res.status}`);
    }
    // The HTTP interface with A's ids in place of an endpoint key.
    for (const id of [...victim.dc, ...victim.p, ...victim.wh, orgA, a.id]) {
      for (const path of [`/e/${id}`, `/e/${id.replace(/^[a-z]+_/, '')}`, `/e/${id.toLowerCase()}`]) {
        const res = await fetch(`${system.origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":666}' });
        const text = await res.text();
        if (res.status !== 404 || leaked(text, [id]).length) failures.push(`POST ${path}: ${res.status} ${text.slice(0, 200)}`);
      }
    }
    expect(failures).toEqual([]);

    expect(await snapshotOfA()).toEqual(before);
    expect((await as(b).get('/users/me')).body.data.orgs.map((o: Json) => o.id)).toEqual([orgB]);
    expect((await as(a).get('/users/me')).status).toBe(200);
  });

  it('a member removed from the org loses every route of it on the very next request, and their routes stop', async () => {
    // While a member, M reaches the org's resources.
    for (const path of [`/v1/sources/${orgOnly.dc[0]}`, `/v1/orgs/${orgA}/sources`, `/v1/webhooks/${orgOnly.wh[0]}`, `/v1/workflows/${orgOnly.p[0]}`]) {
      expect([path, (await send(m.apiKey, { method: 'GET', path })).status]).toEqual([path, 200]);
    }
    admin(system, ['orgs', 'remove-member', '--org', orgA, '--user', m.id]);
    const mOwn = { dc: '', dc2: '', wh: '', p: '', sc: '', o: '' };
    // A webhook of M's that no subscription names: M may still remove the subscriptions M made (they are M's).
    const whM = String(ok<Json>(await as(m).post('/webhooks', { url: mReceiver.url }), 'M second webhook').id);
    const dcM = ok<Json>(await as(m).post('/sources', { component_code: B_COMPONENT }), 'M source');
    const wfM = ok<Json>(await as(m).post('/workflows', { name: 'm-flow', trigger: { manual: {} }, steps: [{ name: 's', code: B_STEP }] }), 'M workflow');
    const dcM2 = ok<Json>(await as(m).post('/sources', { component_id: dcM.component_id }), 'M second source');
    Object.assign(mOwn, { dc: dcM.id, dc2: dcM2.id, wh: whM, p: wfM.id, sc: dcM.component_id, o: orgA });
    const failures = (await sweep(m.apiKey, { own: ownValue({ ...mOwn, o: 'o_none' }) }, orgOnly, { dc: orgOnly.dc[0], p: orgOnly.p[0], wh: orgOnly.wh[0], sc: orgOnly.sc[0], o: orgA }))
      // A list of M's own answers 404 for `o_none`: only the probes naming A's org count here.
      .filter((f) => !f.includes('(own)'));
    expect(failures).toEqual([]);

    // The routes M made while a member stop — the one to M's own webhook and the one between M's two orgs (owned
    // by M's other org, so A's org could neither see nor remove it): the org's next event reaches A's webhook only.
    // (The delivery app reloads subscriptions on any change: this one makes it reload now.)
    ok(await as(a).post(`/webhooks?org_id=${orgA}`, { url: aReceiver.url, name: 'A-PRIVATE-reload' }), 'a change');
    await eventually(async () => {
      const h = (await fetch(`http://127.0.0.1:${system.env.DELIVERY_METRICS_PORT}/healthz`).then((r) => r.json())) as { subscriptions?: number };
      return h.subscriptions === 3;
    }, { what: 'the delivery app to route only A\'s three subscriptions', timeoutMs: 10_000 }).catch(() => undefined);
    const before = mReceiver.received.length;
    const aBefore = aReceiver.received.length;
    const source = ok<Json>(await as(a).get(`/sources/${orgOnly.dc[0]}`), 'org source');
    await fetch(String((source.configured_props as { http: { endpoint_url: string } }).http.endpoint_url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":3}' });
    await eventually(async () => aReceiver.received.slice(aBefore).some((r) => r.body.includes('A-EVENT-3')), { what: 'the org event at A', timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 2_000));
    expect(mReceiver.received.slice(before).map((r) => r.body)).toEqual([]);
    // And B's receiver never saw anything of A's.
    expect(bReceiver.received.filter((r) => /A-(EVENT|PRIVATE|SECRET)/.test(r.body))).toEqual([]);
  });
});
