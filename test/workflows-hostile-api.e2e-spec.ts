import { client, createUser } from './support/accounts';
import { apiOnlySystem } from './support/system-with-user';

/**
 * The workflow API against a hostile tenant: an error quotes at most a few hundred characters of a value the
 * client sent, however long it is; the source a workflow deploys for its trigger is changed and deleted through
 * the workflow only.
 */
const SOURCE = `export default { key: "wf-hostile-trigger", name: "t", version: "0.0.1", type: "source",
  props: { n: { type: "integer", optional: true } }, async run() {} };`;
const STEP = 'export default defineComponent({ async run({ steps }) { return steps.trigger.event; } });';
const TYPED = 'export default defineComponent({ props: { n: { type: "integer" } }, async run() { return this.n; } });';
const HUGE = 'a'.repeat(1024 * 1024);

describe('workflow API against a hostile tenant', () => {
  const ctx = apiOnlySystem();

  const steps = [{ name: 'a', code: STEP }];

  it('quotes at most a few hundred characters of a 1 MB value in its error, whichever field it is in', async () => {
    const bodies: Record<string, unknown>[] = [
      { trigger: { source: `dc_${HUGE}` }, steps },
      { trigger: { source: { key: HUGE } }, steps },
      { trigger: { source: { component_id: `sc_${HUGE}` } }, steps },
      { trigger: { events: { emitter_id: `dc_${HUGE}` } }, steps },
      { trigger: { timer: { cron: '0 * * * *', timezone: HUGE } }, steps },
      { trigger: { http: { [HUGE]: true } }, steps },
      { trigger: { manual: {} }, steps: [{ name: 'a', action: HUGE }] },
      { trigger: { manual: {} }, steps: [{ name: 'a', code: STEP, props: { [HUGE.slice(0, 20_000)]: 1 } }] },
      { trigger: { manual: {} }, steps: [{ name: 'a', code: TYPED, props: { n: HUGE.slice(0, 60_000) } }] },
      { trigger: { manual: {} }, steps, secrets: { [HUGE]: 'x' } },
    ];
    const answers = [];
    for (const [i, body] of bodies.entries()) {
      const res = await ctx.api.post('/workflows', { name: `huge-${i}`, ...body });
      answers.push({ i, status: res.status, code: res.body.code, short: JSON.stringify(res.body).length < 1000 });
    }
    expect(answers).toEqual(bodies.map((_, i) => ({ i, status: 400, code: 'invalid_workflow', short: true })));
  });

  it("refuses to change or delete a workflow's trigger source through /sources (409 naming the workflow); the workflow's deploys and delete still do", async () => {
    expect((await ctx.api.post('/components', { component_code: SOURCE })).status).toBe(200);
    const created = await ctx.api.post('/workflows', { name: 'managed', trigger: { source: { key: 'wf-hostile-trigger', props: { n: 1 } } }, steps });
    expect(created.status).toBe(200);
    const wf = created.body.data.id as string;
    const managed = created.body.data.trigger.source as string;
    const before = (await ctx.api.get(`/sources/${managed}`)).body.data;
    const refusal = { code: 'conflict', details: { id: managed, workflow_id: wf } };
    const put = await ctx.api.put(`/sources/${managed}`, { component_id: before.component_id, configured_props: { n: 2 }, active: false });
    expect({ status: put.status, code: put.body.code, details: put.body.details }).toEqual({ status: 409, ...refusal });
    expect(put.body.error).toContain(`PUT /v1/workflows/${wf}`);
    const del = await ctx.api.del(`/sources/${managed}`);
    expect({ status: del.status, code: del.body.code, details: del.body.details }).toEqual({ status: 409, ...refusal });
    const after = (await ctx.api.get(`/sources/${managed}`)).body.data;
    expect({ active: after.active, props: after.configured_props }).toEqual({ active: before.active, props: before.configured_props });
    // Another account still sees nothing of it.
    const other = client(ctx.system, createUser(ctx.system).apiKey);
    expect((await other.del(`/sources/${managed}`)).status).toBe(404);
    // A deploy updates it in place; one that drops the inline source deletes it.
    const redeployed = await ctx.api.put(`/workflows/${wf}`, { name: 'managed', trigger: { source: { key: 'wf-hostile-trigger', props: { n: 3 } } }, steps });
    expect({ status: redeployed.status, source: redeployed.body.data?.trigger.source }).toEqual({ status: 200, source: managed });
    expect((await ctx.api.get(`/sources/${managed}`)).body.data.configured_props).toEqual({ n: 3 });
    expect((await ctx.api.put(`/workflows/${wf}`, { name: 'managed', trigger: { manual: {} }, steps })).status).toBe(200);
    expect((await ctx.api.get(`/sources/${managed}`)).status).toBe(404);
  });
});
