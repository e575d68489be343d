import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * What a workflow deploy refuses (400 invalid_workflow naming the field) instead of storing something
 * that changes or fails at run time: step props checked as a source's are (templates left to the run),
 * a source as a step, a timer with both schedules, fields of a manual trigger, templates that cannot
 * resolve. And the errors a workflow's HTTP endpoint answers say "workflow", not "source".
 */
const ACTION = `export default {
  key: "wf-send-message", name: "Send message", version: "0.0.1", type: "action",
  props: { channel: { type: "string" }, text: { type: "string" }, n: { type: "integer", optional: true } },
  async run({ $ }) { return { channel: this.channel, text: this.text, n: this.n }; },
};`;

const TYPED = `export default defineComponent({
  props: { n: { type: "integer" }, c: { type: "string", options: ["a", "b"] } },
  async run({ steps, $ }) { return { n: this.n, c: this.c }; },
});`;

const SOURCE_STEP = `export default defineComponent({
  type: "source",
  props: { http: "$.interface.http" },
  async run(event) { this.$emit(event); },
});`;

type Run = { status: string; steps: { name: string; return_value?: unknown; error?: { name: string; message: string } }[] };

describe('workflow definitions: what a deploy refuses', () => {
  let system: System;
  let user: TestUser;

  beforeAll(async () => {
    system = await startSystem({ HTTP_RESPONSE_TIMEOUT_MS: '1500' });
    user = createUser(system);
    expect((await api().post('/components', { component_code: ACTION })).status).toBe(200);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const api = () => client(system, user.apiKey);
  const refused = async (body: Record<string, unknown>, path: string): Promise<void> => {
    const res = await api().post('/workflows', { trigger: { manual: {} }, ...body });
    expect({ status: res.status, code: res.body.code, path: res.body.details?.path }).toEqual({ status: 400, code: 'invalid_workflow', path });
    expect(res.body.error.startsWith(`${path}: `)).toBe(true);
  };
  const runsOf = async (id: string): Promise<Run[]> => ((await api().get(`/workflows/${id}/runs`)).body?.data ?? []) as Run[];

  it('answers a missing field, an unknown field and a value out of bounds as every route does (invalid_request: details.fields, or details.field)', async () => {
    const steps = [{ name: 'a', code: TYPED, props: { n: 1, c: 'a' } }];
    const missing = await api().post('/workflows', { trigger: { manual: {} } });
    expect({ status: missing.status, body: missing.body }).toEqual({ status: 400, body: { error: 'name, steps are required', code: 'invalid_request', details: { in: 'body', fields: ['name', 'steps'] } } });
    const unknown = await api().post('/workflows', { name: 'u', trigger: { manual: {} }, steps, owner_id: 'u_x' });
    expect({ status: unknown.status, body: unknown.body }).toEqual({
      status: 400,
      body: { error: 'unknown field: owner_id', code: 'invalid_request', details: { in: 'body', fields: ['owner_id'], allowed: ['include', 'exclude', 'org_id', 'name', 'trigger', 'steps', 'settings', 'secrets', 'active'] } },
    });
    const empty = await api().post('/workflows', { name: 'e', trigger: { manual: {} }, steps: [] });
    expect({ status: empty.status, body: empty.body }).toEqual({
      status: 400,
      body: { error: 'steps must NOT have fewer than 1 items', code: 'invalid_request', details: { in: 'body', field: 'steps', errors: [{ field: 'steps', rule: 'minItems', message: 'must NOT have fewer than 1 items' }] } },
    });
    const long = await api().post('/workflows', { name: 'n'.repeat(201), trigger: { manual: {} }, steps });
    expect({ status: long.status, code: long.body.code, error: long.body.error, field: long.body.details?.field }).toEqual({ status: 400, code: 'invalid_request', error: 'name must NOT have more than 200 characters', field: 'name' });
  });

  it("validates a step's props as a source's: types, options, required and unknown props; a template is left to the run", async () => {
    await refused({ name: 'typed', steps: [{ name: 'a', code: TYPED, props: { n: 'abc', c: 'a' } }] }, 'steps[0].props.n');
    await refused({ name: 'typed', steps: [{ name: 'a', code: TYPED, props: { n: 1, c: 'zzz' } }] }, 'steps[0].props.c');
    await refused({ name: 'act', steps: [{ name: 'send', action: 'wf-send-message', props: { text: 'hi' } }] }, 'steps[0].props.channel');
    await refused({ name: 'act', steps: [{ name: 'send', action: 'wf-send-message', props: { channel: '#x', text: 'hi', nope: 1 } }] }, 'steps[0].props.nope');

    const created = await api().post('/workflows', {
      name: 'templated',
      trigger: { manual: {} },
      steps: [
        { name: 'typed', code: TYPED, props: { n: '{{steps.trigger.event.n}}', c: '{{secrets.C}}' } },
        { name: 'send', action: 'wf-send-message', props: { channel: '#orders', text: 'n is {{steps.typed.$return_value.n}}' } },
      ],
      secrets: { C: 'b' },
    });
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    expect((await api().post(`/workflows/${id}/run`, { event: { n: 7 } })).status).toBe(202);
    const [run] = await eventually(async () => ((await runsOf(id)).length ? runsOf(id) : undefined), { what: 'the run' });
    expect(run.status).toBe('success');
    expect(run.steps.map((s) => s.return_value)).toEqual([{ n: 7, c: 'b' }, { channel: '#orders', text: 'n is 7' }]);
  });

  it('refuses a source as a step: a registry source as action, or code of type "source"', async () => {
    await eventually(async () => (await api().get('/components/registry/http-request-counter')).status === 200, { what: 'the registry to be seeded' });
    await refused({ name: 'src', steps: [{ name: 'count', action: 'http-request-counter' }] }, 'steps[0].action');
    await refused({ name: 'src', steps: [{ name: 'hook', code: SOURCE_STEP }] }, 'steps[0].code');
  });

  it('refuses (413) a workflow larger than the one NATS message the runner reads it from, before storing or deploying anything', async () => {
    // Each prop within PROPS_MAX_BYTES and each step's props within PROPS_DOCUMENT_MAX_BYTES: 50 of them are 3 MB.
    const code = 'export default defineComponent({ props: { p: { type: "string" } }, async run() { return 1; } });';
    const steps = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `s${i}`, code, props: { p: 'x'.repeat(60_000) } }));
    const inline = { source: { code: 'module.exports = { name: "t", version: "1", props: { http: "$.interface.http" }, async run() {} };', props: {} } };
    const big = await api().post('/workflows', { name: 'too-big', trigger: inline, steps: steps(50) });
    expect({ status: big.status, code: big.body.code }).toEqual({ status: 413, code: 'payload_too_large' });
    expect(big.body.error).toMatch(/^the workflow is \d+ bytes as the runner reads it/);
    expect(big.body.details).toEqual({ bytes: expect.any(Number), limit_bytes: expect.any(Number) });
    const bigSecrets = await api().post('/workflows', { name: 'too-big', trigger: { manual: {} }, steps: steps(1), secrets: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`S${i}`, 'y'.repeat(60_000)])) });
    expect(bigSecrets.status).toBe(413);
    expect((await api().get('/users/me/workflows')).body.data.map((w: { name: string }) => w.name)).not.toContain('too-big');
    expect((await api().get('/users/me/sources')).body.data.map((x: { name: string }) => x.name)).not.toContain('too-big trigger');
    // One that fits is stored and runs; a deploy making it too large is refused and leaves it as it was.
    const ok = (await api().post('/workflows', { name: 'fits', trigger: { manual: {} }, steps: steps(5) })).body.data;
    const grown = await api().put(`/workflows/${ok.id}`, { name: 'fits', trigger: { manual: {} }, steps: steps(50) });
    expect(grown.status).toBe(413);
    expect((await api().get(`/workflows/${ok.id}`)).body.data.deployment_id).toBe(ok.deployment_id);
    expect((await api().post(`/workflows/${ok.id}/run`, {})).status).toBe(202);
    expect((await eventually(async () => (await runsOf(ok.id))[0], { what: 'the run', timeoutMs: 30_000 })).status).toBe('success');
  });

  it('refuses a timer with both cron and intervalSeconds, and fields of a manual trigger', async () => {
    const steps = [{ name: 'a', code: TYPED, props: { n: 1, c: 'a' } }];
    await refused({ name: 'both', trigger: { timer: { cron: '0 * * * *', intervalSeconds: 60 } }, steps }, 'trigger.timer');
    await refused({ name: 'manual', trigger: { manual: { x: 1 } }, steps }, 'trigger.manual.x');
  });

  it("refuses an events trigger naming the workflow itself, as one naming an emitter that does not exist or is another account's", async () => {
    const steps = [{ name: 'a', code: TYPED, props: { n: 1, c: 'a' } }];
    const theirs = (await client(system, createUser(system).apiKey).post('/workflows', { name: 'theirs', trigger: { manual: {} }, steps })).body.data.id as string;
    await refused({ name: 'missing', trigger: { events: { emitter_id: 'p_nosuchworkflow', event_name: '' } }, steps }, 'trigger.events.emitter_id');
    await refused({ name: 'theirs', trigger: { events: { emitter_id: theirs, event_name: '$errors' } }, steps }, 'trigger.events.emitter_id');
    const wf = (await api().post('/workflows', { name: 'self', trigger: { manual: {} }, steps })).body.data;
    for (const event_name of ['', '$errors']) {
      const res = await api().put(`/workflows/${wf.id}`, { name: 'self', trigger: { events: { emitter_id: wf.id, event_name } }, steps });
      expect({ status: res.status, code: res.body.code, details: res.body.details }).toEqual({ status: 400, code: 'invalid_workflow', details: { path: 'trigger.events.emitter_id' } });
      expect(res.body.error).toBe(`trigger.events.emitter_id: a workflow cannot be triggered by its own events (${wf.id})`);
    }
    // Nothing of it is kept: the trigger is still manual, and no subscription feeds the workflow.
    expect((await api().get(`/workflows/${wf.id}`)).body.data.trigger).toEqual({ manual: {} });
    expect((await api().get('/users/me/subscriptions')).body.data.filter((s: { listener_id: string }) => s.listener_id === wf.id)).toEqual([]);
  });

  it('refuses templates that cannot resolve: not steps./trigger./secrets., an unknown step, the step itself or a later one', async () => {
    const a = { name: 'a', code: TYPED, props: { n: 1, c: 'a' } };
    await refused({ name: 'tpl', steps: [a, { name: 'send', action: 'wf-send-message', props: { channel: '{{ foo }}', text: 't' } }] }, 'steps[1].props.channel');
    await refused({ name: 'tpl', steps: [a, { name: 'send', action: 'wf-send-message', props: { channel: '#x', text: 'x {{steps.nosuch.y}}' } }] }, 'steps[1].props.text');
    await refused({ name: 'tpl', steps: [a, { name: 'b', action: 'wf-send-message', props: { channel: '#x', text: '{{steps.b.y}}' } }] }, 'steps[1].props.text');
    await refused({ name: 'tpl', steps: [{ name: 'first', action: 'wf-send-message', props: { channel: '#x', text: '{{steps.a.$return_value}}' } }, a] }, 'steps[0].props.text');
  });

  it('says "workflow" in the errors of a workflow\'s HTTP endpoint (504, 502 for a 1xx, 404 when inactive)', async () => {
    const deploy = async (name: string, body: string, active = true): Promise<string> => {
      const res = await api().post('/workflows', { name, active, trigger: { http: { customResponse: true } }, steps: [{ name: 'answer', code: `export default defineComponent({ async run({ steps, $ }) { ${body} } });` }] });
      expect(res.status).toBe(200);
      return res.body.data.trigger.endpoint_url as string;
    };
    const slow = await deploy('slow', 'await new Promise((r) => setTimeout(r, 5000));');
    const timeout = await eventually(async () => {
      const r = await fetch(slow, { method: 'POST' });
      return r.status === 504 ? r : undefined;
    }, { what: 'the 504', timeoutMs: 30_000 });
    expect(((await timeout.json()) as { error: string }).error).toBe('the workflow did not call respond() within 1500 ms');

    const informational = await deploy('informational', 'await $.respond({ status: 101, body: "x" });');
    const bad = await eventually(async () => {
      const r = await fetch(informational, { method: 'POST' });
      return r.status === 502 ? r : undefined;
    }, { what: 'the 502' });
    expect(((await bad.json()) as { error: string }).error).toMatch(/^the workflow responded with status 101: /);

    const inactive = await deploy('inactive', 'await $.respond({ status: 200 });', false);
    const res = await fetch(inactive, { method: 'POST' });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: `no active HTTP workflow at endpoint ${inactive.slice(inactive.lastIndexOf('/') + 1)}`, code: 'not_found' });
  });

  it('runs an HTTP workflow by hand: without an event the step gets { timestamp, manual: true }, and source_type stays HTTP', async () => {
    const code = 'export default defineComponent({ async run({ steps }) { return { event: steps.trigger.event, source_type: steps.trigger.context.source_type }; } });';
    const created = await api().post('/workflows', { name: 'by-hand', trigger: { http: {} }, steps: [{ name: 'a', code }] });
    expect((await api().post(`/workflows/${created.body.data.id}/run`, {})).status).toBe(202);
    const [run] = await eventually(async () => {
      const runs = await runsOf(created.body.data.id);
      return runs.length ? runs : undefined;
    }, { what: 'the run record' });
    expect(run.steps[0].return_value).toEqual({ event: { timestamp: expect.any(Number), manual: true }, source_type: 'HTTP' });
  });

  it('gives a prop no value for a template that finds nothing at run time: its default, or nothing inside text', async () => {
    const reader = 'export default defineComponent({ props: { whole: { type: "string" }, dflt: { type: "integer", default: 7 }, text: { type: "string" } }, async run() { return { whole: this.whole === undefined ? "undefined" : this.whole, dflt: this.dflt, text: this.text }; } });';
    const created = await api().post('/workflows', {
      name: 'finds-nothing',
      trigger: { manual: {} },
      steps: [
        { name: 'a', code: 'export default defineComponent({ async run() { return { x: null }; } });' },
        { name: 'b', code: reader, props: { whole: '{{steps.a.$return_value.nope}}', dflt: '{{steps.a.$return_value.nope}}', text: 'x={{steps.a.$return_value.x}}|{{steps.a.$return_value.constructor}}|' } },
      ],
    });
    expect(created.status).toBe(200);
    expect((await api().post(`/workflows/${created.body.data.id}/run`, { event: {} })).status).toBe(202);
    const [run] = await eventually(async () => {
      const runs = await runsOf(created.body.data.id);
      return runs.length ? runs : undefined;
    }, { what: 'the run record' });
    expect(run.status).toBe('success');
    expect(run.steps[1].return_value).toEqual({ whole: 'undefined', dflt: 7, text: 'x=||' });
  });

  it('reads an http: {} trigger back as { customResponse: false } with its endpoint, which answers {"success":true}', async () => {
    const created = await api().post('/workflows', { name: 'plain-http', trigger: { http: {} }, steps: [{ name: 'a', code: 'export default defineComponent({ async run() { return 1; } });' }] });
    expect(created.status).toBe(200);
    expect(created.body.data.trigger).toEqual({ http: { customResponse: false }, endpoint_url: expect.stringMatching(/\/e\/en/) });
    expect((await api().get(`/workflows/${created.body.data.id}`)).body.data.trigger).toEqual(created.body.data.trigger);
    const res = await eventually(async () => {
      const r = await fetch(created.body.data.trigger.endpoint_url, { method: 'POST', body: 'x' });
      return r.status === 200 ? r : undefined;
    }, { what: 'the endpoint to answer' });
    expect(await res.json()).toEqual({ success: true });
  });
});
