import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pd, tempHome } from './support/pd';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * Workflows through the real apps: HTTP (with $.respond), timer and source
 * triggers, steps passing return values and exports, templates and secrets,
 * $.send.emit routed to a webhook by a p_ subscription, a failed run's $errors
 * event (every field) delivered to a second workflow and replayed, and
 * concurrency 1 keeping the order of events.
 */
const NORMALIZE = `export default defineComponent({
  async run({ steps, $ }) {
    const body = steps.trigger.event.body || {};
    $.export("$summary", "normalized " + body.order);
    $.export("total", body.qty * body.price);
    console.log("normalizing", body.order);
    return { summary: "order " + body.order, context_workflow: steps.trigger.context.workflow_id };
  },
});`;

const RESPOND = `export default defineComponent({
  props: { greeting: { type: "string" }, token: { type: "string", secret: true } },
  async run({ steps, $ }) {
    await $.respond({ status: 201, headers: { "x-step": "respond" }, body: { greeting: this.greeting, total: steps.normalize.total, token_length: this.token.length } });
    $.send.emit({ raw_event: { order: steps.trigger.event.body.order, summary: steps.normalize.$return_value.summary } });
    return "done";
  },
});`;

// A plain default export (no defineComponent, no name or version), as Pipedream's code steps may be written.
const FAILING = `export default {
  async run({ steps, $ }) {
    if (steps.trigger.event.fail) {
      throw new TypeError("bad order " + steps.trigger.event.order);
    }
    $.send.emit({ raw_event: { ok: steps.trigger.event.order } });
  },
};`;

const ECHO = `export default defineComponent({
  async run({ steps, $ }) {
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 40)));
    $.send.emit({ raw_event: steps.trigger.event });
  },
});`;

const HTTP_SOURCE = `module.exports = {
  name: "Hook", version: "1",
  props: { http: "$.interface.http" },
  async run(event) { this.$emit({ from_source: event.body.n }); },
};`;

type Summary = { id: string; event: Record<string, any>; metadata: { emitter_id: string; name: string; emit_id: string } }; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('workflows end to end', () => {
  let system: System;
  let user: TestUser;
  let hookServer: Server;
  let hookUrl: string;
  const received: Record<string, unknown>[] = [];

  beforeAll(async () => {
    system = await startSystem({ TIMER_MIN_INTERVAL_SECONDS: '1' });
    user = createUser(system);
    hookServer = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>);
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => hookServer.listen(0, '127.0.0.1', r));
    const addr = hookServer.address() as { port: number };
    hookUrl = `http://127.0.0.1:${addr.port}/hook`;
  });
  afterAll(async () => {
    await system?.stop();
    await new Promise((r) => hookServer?.close(r));
  });

  const api = () => client(system, user.apiKey);
  const emits = async (id: string): Promise<Summary[]> => (await api().get(`/workflows/${id}/event_summaries?expand=event&limit=100`)).body.data as Summary[];
  const errors = async (id: string): Promise<Summary[]> => (await api().get(`/workflows/${id}/$errors/event_summaries?expand=event`)).body.data as Summary[];

  it('validates the definition and names the path of the bad field', async () => {
    const bad = await api().post('/workflows', { name: 'x', trigger: { http: {} }, steps: [{ name: 'a', code: NORMALIZE }, { name: 'b', props: {} }] });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'steps[1]: needs exactly one of code or action', code: 'invalid_workflow', details: { path: 'steps[1]' } });
    const secret = await api().post('/workflows', { name: 'x', trigger: { http: {} }, steps: [{ name: 'a', code: NORMALIZE, props: { t: '{{secrets.NOPE}}' } }] });
    expect(secret.body).toEqual(expect.objectContaining({ code: 'invalid_workflow', details: expect.objectContaining({ path: 'secrets.NOPE' }) }));
    expect((await api().get('/workflows/p_unknown')).status).toBe(404);
  });

  it('runs an HTTP-triggered workflow: $.respond answers the caller, steps see earlier return values and exports, emits reach a webhook through a p_ subscription', async () => {
    const created = await api().post('/workflows', {
      name: 'orders',
      trigger: { http: { customResponse: true } },
      steps: [
        { name: 'normalize', code: NORMALIZE },
        { name: 'respond', code: RESPOND, props: { greeting: 'hello {{steps.normalize.$return_value.summary}}', token: '{{secrets.TOKEN}}' } },
      ],
      secrets: { TOKEN: 'abcdef' },
    });
    expect(created.status).toBe(200);
    const wf = created.body.data;
    expect(wf).toEqual(expect.objectContaining({ id: expect.stringMatching(/^p_/), deployment_id: expect.stringMatching(/^d_/), name: 'orders', active: true, secrets: ['TOKEN'] }));
    expect(wf.steps.map((s: { cell_id: string }) => s.cell_id)).toEqual([expect.stringMatching(/^c_/), expect.stringMatching(/^c_/)]);
    expect(JSON.stringify(wf)).not.toContain('abcdef');
    const endpoint = wf.trigger.endpoint_url as string;

    const hook = await api().post('/webhooks', { url: hookUrl });
    const sub = await api().post(`/subscriptions?emitter_id=${wf.id}&listener_id=${hook.body.data.id}`);
    expect(sub.status).toBe(200);

    const res = await eventually(async () => {
      const r = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order: 'A1', qty: 2, price: 5 }) });
      return r.status === 201 ? r : undefined;
    }, { what: 'the workflow to answer' });
    expect(res.headers.get('x-step')).toBe('respond');
    expect(await res.json()).toEqual({ greeting: 'hello order A1', total: 10, token_length: 6 });

    const [emitted] = await eventually(async () => ((await emits(wf.id)).length ? emits(wf.id) : undefined), { what: 'the emitted event' });
    expect(emitted.event).toEqual({ raw_event: { order: 'A1', summary: 'order A1' } });
    expect(emitted.metadata).toEqual(expect.objectContaining({ emitter_id: wf.id, name: '' }));
    await eventually(async () => received.length > 0, { what: 'the webhook delivery' });
    expect(JSON.stringify(received[0])).toContain('"summary":"order A1"');

    const runs = (await api().get(`/workflows/${wf.id}/runs`)).body.data;
    expect(runs[0]).toEqual(expect.objectContaining({ status: 'success', failed_step: null, deployment_id: wf.deployment_id }));
    expect(runs[0].steps[0]).toEqual(expect.objectContaining({ name: 'normalize', exports: { $summary: 'normalized A1', total: 10 }, return_value: { summary: 'order A1', context_workflow: wf.id } }));
    expect(runs[0].steps[1].inputs).toEqual({ greeting: 'hello order A1', token: '**********' });

    const listed = await api().get('/users/me/workflows?limit=1');
    expect(listed.body.page_info.total_count).toBeGreaterThanOrEqual(1);
    expect((await api().get('/users/me/workflows?include=id,name')).body.data.every((w: object) => Object.keys(w).sort().join() === 'id,name')).toBe(true);
  });

  it('records a failed run as $errors with every field, delivers it to another workflow, and replays it', async () => {
    const catcher = (await api().post('/workflows', { name: 'catcher', trigger: { manual: {} }, steps: [{ name: 'echo', code: ECHO }] })).body.data;
    const failing = (await api().post('/workflows', { name: 'failing', trigger: { manual: {} }, steps: [{ name: 'check', code: FAILING }] })).body.data;
    expect((await api().post(`/subscriptions?emitter_id=${failing.id}&listener_id=${catcher.id}&event_name=$errors`)).status).toBe(200);

    expect((await api().post(`/workflows/${failing.id}/run`, { event: { fail: true, order: 7 } })).status).toBe(202);
    const [err] = await eventually(async () => ((await errors(failing.id)).length ? errors(failing.id) : undefined), { what: 'the $errors event' });
    expect(err.metadata).toEqual(expect.objectContaining({ name: '$errors', emitter_id: failing.id }));
    expect(err.event.original_event).toEqual({ fail: true, order: 7 });
    expect(err.event.original_context).toEqual({
      id: expect.stringMatching(/^inv_/),
      ts: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      workflow_id: failing.id,
      deployment_id: failing.deployment_id,
      source_type: 'MANUAL',
      verified: false,
      owner_id: user.id,
      platform_version: expect.any(String),
    });
    expect(err.event.error).toEqual({ code: 'TypeError', cellId: failing.steps[0].cell_id, ts: expect.stringMatching(/Z$/), stack: expect.stringContaining('bad order 7') });
    expect(err.event.error.stack).toMatch(/:\d+:\d+/);

    // The second workflow received the error event as its trigger event.
    const [caught] = await eventually(async () => ((await emits(catcher.id)).length ? emits(catcher.id) : undefined), { what: 'the error at the second workflow' });
    expect(caught.event.raw_event).toEqual(expect.objectContaining({ original_event: { fail: true, order: 7 }, error: expect.objectContaining({ code: 'TypeError' }) }));

    // Replayed after a fix: the original event runs through the new deployment.
    const fixed = await api().put(`/workflows/${failing.id}`, { name: 'failing', trigger: { manual: {} }, steps: [{ name: 'check', code: FAILING.replace('if (steps.trigger.event.fail)', 'if (false)') }] });
    expect(fixed.body.data.deployment_id).not.toBe(failing.deployment_id);
    expect(fixed.body.data.steps[0].cell_id).toBe(failing.steps[0].cell_id);
    await eventually(async () => {
      const r = await api().post(`/workflows/${failing.id}/replay`, { event_id: err.id });
      expect(r.status).toBe(202);
      return eventually(async () => (await emits(failing.id)).some((e) => e.event.raw_event?.ok === 7), { timeoutMs: 5000 });
    }, { what: 'the replayed run to succeed', timeoutMs: 30_000 });
    expect((await api().post(`/workflows/${failing.id}/replay`, { event_id: '1-0' })).status).toBe(404);
  });

  it('runs a timer-triggered workflow', async () => {
    const wf = (await api().post('/workflows', { name: 'ticker', trigger: { timer: { intervalSeconds: 1 } }, steps: [{ name: 'echo', code: ECHO }] })).body.data;
    const got = await eventually(async () => ((await emits(wf.id)).length >= 2 ? emits(wf.id) : undefined), { what: 'two timer runs', timeoutMs: 30_000 });
    expect(got[0].event.raw_event).toEqual({ timestamp: expect.any(Number), interval_seconds: 1 });
    expect((await api().del(`/workflows/${wf.id}`)).status).toBe(204);
    expect((await api().get(`/workflows/${wf.id}`)).status).toBe(404);
  });

  it('hands a cron-triggered workflow its timer event with the timezone', async () => {
    const wf = (await api().post('/workflows', { name: 'cron-ticker', trigger: { timer: { cron: '* * * * *', timezone: 'Europe/Paris' } }, steps: [{ name: 'echo', code: ECHO }] })).body.data;
    const [got] = await eventually(async () => ((await emits(wf.id)).length ? emits(wf.id) : undefined), { what: 'the first cron run', timeoutMs: 75_000 });
    expect(got.event.raw_event).toEqual({ timestamp: expect.any(Number), cron: '* * * * *', timezone: 'Europe/Paris' });
    expect((await api().del(`/workflows/${wf.id}`)).status).toBe(204);
  }, 90_000);

  it('runs a source-triggered workflow for each event of its source', async () => {
    const source = (await api().post('/sources', { component_code: HTTP_SOURCE })).body.data;
    const wf = (await api().post('/workflows', { name: 'from-source', trigger: { source: source.id }, steps: [{ name: 'echo', code: ECHO }] })).body.data;
    const subs = (await api().get('/users/me/subscriptions')).body.data;
    expect(subs).toEqual(expect.arrayContaining([expect.objectContaining({ emitter_id: source.id, listener_id: wf.id, event_name: '' })]));
    await eventually(async () => (await fetch(source.configured_props.http.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":42}' })).ok);
    const [got] = await eventually(async () => ((await emits(wf.id)).length ? emits(wf.id) : undefined), { what: 'the workflow run from the source event' });
    expect(got.event.raw_event).toEqual({ from_source: 42 });
  });

  it('keeps the order of events with concurrency 1', async () => {
    const wf = (await api().post('/workflows', { name: 'ordered', trigger: { manual: {} }, steps: [{ name: 'echo', code: ECHO }], settings: { concurrency: 1 } })).body.data;
    for (let n = 0; n < 8; n++) expect((await api().post(`/workflows/${wf.id}/run`, { event: { n } })).status).toBe(202);
    const got = await eventually(async () => ((await emits(wf.id)).length >= 8 ? emits(wf.id) : undefined), { what: 'eight runs', timeoutMs: 30_000 });
    expect(got.reverse().map((e) => e.event.raw_event.n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('deploys a workflow file with pd deploy: code files bundled, secrets from the environment, redeployed by name', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wf-file-'));
    writeFileSync(join(dir, 'answer.mjs'), `export default defineComponent({ props: { token: { type: "string", secret: true } }, async run({ steps, $ }) { await $.respond({ status: 200, body: { name: steps.trigger.event.body.name, token: this.token } }); } });`);
    writeFileSync(join(dir, 'workflow.yaml'), ['name: from-file', 'trigger:', '  http: { customResponse: true }', 'steps:', '  - name: answer', '    code: ./answer.mjs', '    props: { token: "{{secrets.API_TOKEN}}" }', ''].join('\n'));
    const home = tempHome();
    expect((await pd(['login', '--api-key', user.apiKey, '--api-base-url', system.baseUrl], home)).code).toBe(0);
    const first = await pd(['deploy', join(dir, 'workflow.yaml'), '--json'], home, { PD_SECRET_API_TOKEN: 's3cret' });
    expect(first.stderr).toBe('');
    const wf = JSON.parse(first.stdout);
    expect(wf).toEqual(expect.objectContaining({ id: expect.stringMatching(/^p_/), name: 'from-file', secrets: ['API_TOKEN'] }));
    const res = await eventually(async () => {
      const r = await fetch(wf.trigger.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Ada"}' });
      return r.status === 200 ? r.json() : undefined;
    });
    expect(res).toEqual({ name: 'Ada', token: 's3cret' });
    const again = JSON.parse((await pd(['deploy', join(dir, 'workflow.yaml'), '--json'], home)).stdout);
    expect(again.id).toBe(wf.id);
    expect(again.deployment_id).not.toBe(wf.deployment_id);
    // Deployed again without the secret in the environment: the stored value is kept.
    expect(again.secrets).toEqual(['API_TOKEN']);
    const kept = await eventually(async () => {
      const r = await fetch(wf.trigger.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Bo"}' });
      const body = r.status === 200 ? ((await r.json()) as { name?: string; token?: string }) : undefined;
      return body?.name === 'Bo' ? body : undefined;
    }, { what: 'the redeployed workflow to answer' });
    expect(kept).toEqual({ name: 'Bo', token: 's3cret' });
    writeFileSync(join(dir, 'bad.yaml'), 'name: bad\ntrigger: { http: {} }\nsteps:\n  - name: 1x\n    code: ./answer.mjs\n');
    const bad = await pd(['deploy', join(dir, 'bad.yaml')], home);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('steps[0].name');
  });

  it('keeps $.service.db per step across runs, gives app props their $auth and steps their exports; routes p_* and auto-subscriptions', async () => {
    const COUNTER = `export default defineComponent({
      props: { db: "$.service.db", github: { type: "app", app: "github" }, label: { type: "string", optional: true, default: "runs" } },
      async run({ steps, $ }) {
        const n = (this.db.get("n") || 0) + 1;
        this.db.set("n", n);
        $.export("token_prefix", this.github.$auth.oauth_access_token.slice(0, 3));
        return { n, label: this.label };
      },
    });`;
    const OTHER = `export default defineComponent({ props: { db: "$.service.db" }, async run({ steps, $ }) {
      $.send.emit({ raw_event: { mine: this.db.get("n") ?? null, counted: steps.count.$return_value.n, prefix: steps.count.token_prefix, label: steps.count.$return_value.label } });
    } });`;
    const hook = (await api().post('/webhooks', { url: hookUrl })).body.data;
    // An auto-subscription made now applies to workflows created after it; a p_* subscription to every workflow of the owner.
    expect((await api().post(`/auto_subscriptions?event_name=$errors&listener_id=${hook.id}`)).status).toBe(200);
    expect((await api().post(`/subscriptions?emitter_id=p_*&listener_id=${hook.id}`)).status).toBe(200);
    const wf = (await api().post('/workflows', {
      name: 'stateful',
      trigger: { manual: {} },
      steps: [
        { name: 'count', code: COUNTER, props: { github: { $auth: { oauth_access_token: '{{secrets.GH}}' } } } },
        { name: 'report', code: OTHER },
      ],
      secrets: { GH: 'ghp_secret' },
      // One run at a time: each run then sees the db the previous one left.
      settings: { concurrency: 1 },
    })).body.data;
    expect(JSON.stringify(wf)).not.toContain('ghp_secret');
    const subs = (await api().get('/users/me/subscriptions')).body.data;
    expect(subs).toEqual(expect.arrayContaining([expect.objectContaining({ emitter_id: wf.id, listener_id: hook.id, event_name: '$errors' })]));
    const before = received.length;
    for (let n = 0; n < 3; n++) await api().post(`/workflows/${wf.id}/run`, { event: { n } });
    const got = await eventually(async () => ((await emits(wf.id)).length >= 3 ? emits(wf.id) : undefined), { what: 'three runs' });
    expect(got.map((e) => e.event.raw_event).sort((a, b) => a.counted - b.counted)).toEqual([1, 2, 3].map((n) => ({ mine: null, counted: n, prefix: 'ghp', label: 'runs' })));
    // Delivered to the webhook through the p_* subscription.
    await eventually(async () => received.slice(before).filter((r) => JSON.stringify(r).includes('"prefix":"ghp"')).length >= 3, { what: 'p_* deliveries' });
  });

  it('deploys a source given inline as the trigger, updates it with the workflow and removes it with the workflow', async () => {
    const created = await api().post('/workflows', { name: 'inline-source', trigger: { source: { code: HTTP_SOURCE, props: {} } }, steps: [{ name: 'echo', code: ECHO }] });
    expect(created.status).toBe(200);
    const wf = created.body.data;
    expect(wf.trigger).toEqual({ source: expect.stringMatching(/^dc_/), managed: true });
    const sourceId = wf.trigger.source as string;
    const source = (await api().get(`/sources/${sourceId}`)).body.data;
    expect(source.name).toBe('inline-source trigger');
    await eventually(async () => (await fetch(source.configured_props.http.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":7}' })).ok);
    await eventually(async () => (await emits(wf.id)).some((e) => e.event.raw_event.from_source === 7), { what: 'the run from the inline source' });

    const updated = await api().put(`/workflows/${wf.id}`, { name: 'inline-source', trigger: { source: { code: HTTP_SOURCE.replace('from_source', 'from_v2'), props: {} } }, steps: [{ name: 'echo', code: ECHO }] });
    expect(updated.body.data.trigger.source).toBe(sourceId);
    await eventually(async () => (await fetch(source.configured_props.http.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":8}' })).ok);
    await eventually(async () => (await emits(wf.id)).some((e) => e.event.raw_event.from_v2 === 8), { what: 'the run from the updated inline source', timeoutMs: 30_000 });

    // Its source is changed and deleted through the workflow only (test/workflows-hostile-api.e2e-spec.ts).
    expect((await api().del(`/sources/${sourceId}`)).status).toBe(409);

    const bad = await api().post('/workflows', { name: 'bad-inline', trigger: { source: { code: 'module.exports = {}', props: {} } }, steps: [{ name: 'echo', code: ECHO }] });
    expect(bad.status).toBe(400);
    expect(bad.body.details.path).toBe('trigger.source');

    expect((await api().del(`/workflows/${wf.id}`)).status).toBe(204);
    expect((await api().get(`/sources/${sourceId}`)).status).toBe(404);
  });

  it('ends a run at timeout_seconds, routes its error to an events-triggered workflow, and throttles runs', async () => {
    const SLOW = 'export default defineComponent({ async run({ steps }) { await new Promise((r) => setTimeout(r, steps.trigger.event.ms)); return steps.trigger.event.ms; } });';
    const watcher = (await api().post('/workflows', { name: 'error-watcher', trigger: { events: { emitter_id: 'p_*', event_name: '$errors' } }, steps: [{ name: 'echo', code: ECHO }] })).body.data;
    const slow = (await api().post('/workflows', { name: 'slow', trigger: { manual: {} }, steps: [{ name: 'wait', code: SLOW }], settings: { timeout_seconds: 1 } })).body.data;
    await api().post(`/workflows/${slow.id}/run`, { event: { ms: 5000 } });
    const [err] = await eventually(async () => ((await errors(slow.id)).length ? errors(slow.id) : undefined), { what: 'the timeout error' });
    expect(err.event.error).toEqual(expect.objectContaining({ code: expect.stringMatching(/Timeout/), cellId: slow.steps[0].cell_id }));
    const [seen] = await eventually(async () => {
      const list = (await emits(watcher.id)).filter((e) => e.event.raw_event?.original_context?.workflow_id === slow.id);
      return list.length ? list : undefined;
    }, { what: 'the error at the events-triggered workflow' });
    expect(seen.event.raw_event.original_event).toEqual({ ms: 5000 });

    const throttled = (await api().post('/workflows', { name: 'throttled', trigger: { manual: {} }, steps: [{ name: 'wait', code: SLOW }], settings: { throttle: { limit: 1, period_seconds: 2 } } })).body.data;
    for (let i = 0; i < 3; i++) await api().post(`/workflows/${throttled.id}/run`, { event: { ms: 1 } });
    const runs = await eventually(async () => {
      const list = (await api().get(`/workflows/${throttled.id}/runs`)).body.data as { started_at: string; status: string }[];
      return list.length === 3 ? list : undefined;
    }, { what: 'three throttled runs', timeoutMs: 30_000 });
    expect(runs.every((r) => r.status === 'success')).toBe(true);
    const starts = runs.map((r) => Date.parse(r.started_at)).sort((a, b) => a - b);
    // At most one run starts per 2 s window.
    expect(starts[1] - starts[0]).toBeGreaterThanOrEqual(1900);
    expect(starts[2] - starts[1]).toBeGreaterThanOrEqual(1900);
  });

  it('lists the newest runs up to 8 MiB of run records together (at least one), whatever limit asks', async () => {
    const code = 'export default defineComponent({ async run({ steps }) { return "r".repeat(480000) + steps.trigger.event.n; } });';
    const wf = (await api().post('/workflows', { name: 'large-runs', trigger: { manual: {} }, steps: [{ name: 'big', code }] })).body.data;
    for (let n = 0; n < 20; n++) expect((await api().post(`/workflows/${wf.id}/run`, { event: { n } })).status).toBe(202);
    const runsOf = async (limit: number) => (await api().get(`/workflows/${wf.id}/runs?limit=${limit}`)).body.data as { id: string; steps: { return_value: string }[] }[];
    const recorded = async () => (await api().get(`/workflows/${wf.id}/event_summaries?event_name=$logs&limit=1`)).body.page_info.total_count as number;
    await eventually(async () => (await recorded()) === 20, { what: 'the 20 run records', timeoutMs: 60_000 });
    const page = await runsOf(100);
    // 20 records of 480 KB are 9.6 MB: the page ends before the one that would pass 8 MiB.
    expect(page.length).toBeGreaterThanOrEqual(15);
    expect(page.length).toBeLessThan(20);
    expect(Buffer.byteLength(JSON.stringify(page))).toBeLessThanOrEqual(8 * 1024 * 1024);
    expect((await runsOf(3)).length).toBe(3);
  });
});
