import { systemWithUser } from './support/system-with-user';
import { desiredState } from './support/components';
import { sql } from './events.helpers';
import { eventually } from './support/system';

/**
 * A workflow step's props are those of a source: a secret prop — one the component declares or one its
 * `additionalProps()` adds — is validated without being quoted, encrypted at rest and in the desired state, masked
 * in answers, and kept by the mask sent back only while its prop still hides it; a prop `additionalProps()` does not
 * add is refused. `mode` decides whether the added `token` is secret.
 */
const STEP = `export default defineComponent({
  props: { mode: { type: "string", reloadProps: true } },
  async additionalProps() {
    return this.mode === "plain" ? { token: { type: "string" } } : { token: { type: "string", secret: true }, label: { type: "string", optional: true } };
  },
  async run() { return { token: this.token === "step-secret-1" ? "the secret" : this.token, label: this.label ?? null }; },
});`;

/** Declared props: a secret, an app and a plain string (the same for a source, whose run emits what a step returns). */
const PROPS = '{ key: { type: "string", secret: true }, slack: { type: "app", app: "slack" }, note: { type: "string" } }';
const CHECK = 'const got = { key: this.key === "static-secret-2", auth: this.slack.$auth.oauth_access_token === "auth-secret-2", note: this.note };';
const STATIC_STEP = `export default defineComponent({ props: ${PROPS}, async run() { ${CHECK} return got; } });`;
const STATIC_SOURCE = `export default { name: "Masks", version: "0.0.1", type: "source", props: ${PROPS}, async run() { ${CHECK} this.$emit(got); } };`;

type Run = { status: string; deployment_id: string; steps: { inputs: Record<string, unknown>; return_value: unknown }[] };

describe('workflow steps: secret props, those additionalProps() adds included', () => {
  const ctx = systemWithUser();

  const definition = (props: Record<string, unknown>, name = 'step-secrets') => ({ name, trigger: { manual: {} }, steps: [{ name: 's', code: STEP, props }] });
  /**
   * A run of the deployment `deploymentId` (the answer of its create or update): the workflow is run again until one
   * is recorded for it, as the runner may take a moment to have a new deployment.
   */
  const runOf = (id: string, deploymentId: string): Promise<Run> =>
    eventually(async () => {
      const before = ((await ctx.api.get(`/workflows/${id}/runs?limit=100`)).body.data as Run[]).length;
      expect((await ctx.api.post(`/workflows/${id}/run`, { event: {} })).status).toBe(202);
      const runs = await eventually(async () => {
        const data = (await ctx.api.get(`/workflows/${id}/runs?limit=100`)).body.data as Run[];
        return data.length > before ? data : undefined;
      }, { what: 'the run record', timeoutMs: 60_000 });
      return runs[0].deployment_id === deploymentId ? runs[0] : undefined;
    }, { what: `a run of deployment ${deploymentId}`, timeoutMs: 120_000, intervalMs: 1000 });

  it('refuses a wrong added secret without quoting it, and a prop additionalProps() does not add', async () => {
    const wrong = await ctx.api.post('/workflows', definition({ mode: 'secret', token: 918273645 }, 'refused-1'));
    expect([wrong.status, wrong.body.code, wrong.body.details?.path, wrong.body.error]).toEqual([400, 'invalid_workflow', 'steps[0].props.token', 'steps[0].props.token: must be a string, got a number']);
    expect(wrong.text).not.toContain('918273645');
    const unknown = await ctx.api.post('/workflows', definition({ mode: 'plain', token: 't', label: 'not added' }, 'refused-2'));
    expect([unknown.status, unknown.body.code, unknown.body.details?.path]).toEqual([400, 'invalid_workflow', 'steps[0].props.label']);
    const throws = STEP.replace('return this.mode', 'if (this.mode === "boom") throw new Error("no such mode"); return this.mode');
    const failed = await ctx.api.post('/workflows', { name: 'refused-3', trigger: { manual: {} }, steps: [{ name: 's', code: throws, props: { mode: 'boom' } }] });
    expect([failed.status, failed.body.code, failed.body.details?.path, failed.body.error]).toEqual([400, 'invalid_workflow', 'steps[0].props', 'steps[0].props: additionalProps() failed: no such mode']);
    expect(ctx.system.logs('api')).not.toContain('918273645');
  });

  it('refuses a template that cannot resolve in a secret or app value without quoting it, and quotes one in a plain value', async () => {
    const deploy = (props: Record<string, unknown>) => ctx.api.post('/workflows', { name: 'templates', trigger: { manual: {} }, steps: [{ name: 'first', code: STATIC_STEP, props }] });
    const auth = { $auth: { oauth_access_token: 'auth-secret-2' } };
    const cases: [Record<string, unknown>, string, string][] = [
      [{ key: 'pre-{{hunter2-fragment}}-post', slack: auth, note: 'n' }, 'steps[0].props.key', '"{{********}}": a template starts with steps., trigger. or secrets.'],
      [{ key: '{{steps.hunter3.x}}', slack: auth, note: 'n' }, 'steps[0].props.key', '"{{********}}": no step "********" runs before this one (a step reads steps.trigger and the steps before it)'],
      [{ key: '{{ secrets.hunter4.x }}', slack: auth, note: 'n' }, 'steps[0].props.key', '"{{********}}": use {{secrets.NAME}} (a secret name is letters, digits and _)'],
      [{ key: 'k', slack: { $auth: { oauth_access_token: 'xoxb-{{ leaked + token }}' } }, note: 'n' }, 'steps[0].props.slack.$auth.oauth_access_token', 'cannot read "{{********}}": only property paths like steps.name.$return_value.field are allowed'],
      [{ key: 'k', slack: auth, note: '{{steps.nosuch.y}}' }, 'steps[0].props.note', '"{{steps.nosuch.y}}": no step "nosuch" runs before this one (a step reads steps.trigger and the steps before it)'],
    ];
    const answers = [];
    for (const [props, path, problem] of cases) {
      const res = await deploy(props);
      expect([res.status, res.body.code, res.body.details, res.body.error]).toEqual([400, 'invalid_workflow', { path }, `${path}: ${problem}`]);
      answers.push(res.text);
    }
    expect(answers.join('')).not.toMatch(/hunter|leaked/);
    expect(ctx.system.logs('api')).not.toMatch(/hunter|leaked/);
  });

  it("bounds what the steps' additionalProps() add to one workflow together (each call may add 256 KiB)", async () => {
    const big = 'export default defineComponent({ async additionalProps() { const o = {}; for (let i = 0; i < 100; i++) o["p" + i] = { type: "string", optional: true, description: "d".repeat(2500) }; return o; }, async run() {} });';
    const steps = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `s${i}`, code: big, props: {} }));
    expect((await ctx.api.post('/workflows', { name: 'added-4', trigger: { manual: {} }, steps: steps(4) })).status).toBe(200);
    const over = await ctx.api.post('/workflows', { name: 'added-5', trigger: { manual: {} }, steps: steps(5) });
    expect([over.status, over.body.code, over.body.details?.path, over.body.details?.limit_bytes]).toEqual([413, 'payload_too_large', 'steps[4].props', 1024 * 1024]);
    expect(over.body.error).toMatch(/^steps\[4\]\.props: the props additionalProps\(\) added to the steps so far are \d+ bytes of JSON together; one workflow's may take at most 1048576$/);
  });

  it('encrypts an added secret, masks it in answers, and keeps it through a deploy sending the mask while it stays secret', async () => {
    const created = await ctx.api.post('/workflows', definition({ mode: 'secret', token: 'step-secret-1', label: 'shown' }));
    expect([created.status, created.body.data?.steps?.[0]?.props]).toEqual([200, { mode: 'secret', token: '********', label: 'shown' }]);
    const id = created.body.data.id;
    const [row] = await sql<{ steps: unknown }>(ctx.system, 'select steps from workflows where id = $1', [id]);
    expect(JSON.stringify(row.steps)).not.toContain('step-secret-1');
    const state = await eventually(() => desiredState(ctx.system, id), { what: 'the desired state', timeoutMs: 60_000 });
    expect(JSON.stringify(state)).not.toContain('step-secret-1');

    const kept = await ctx.api.put(`/workflows/${id}`, definition({ mode: 'secret', token: '********' }));
    expect([kept.status, kept.body.data?.steps?.[0]?.props]).toEqual([200, { mode: 'secret', token: '********' }]);
    const run = await runOf(id, kept.body.data.deployment_id);
    expect([run.status, run.steps[0].return_value, run.steps[0].inputs.token]).toEqual(['success', { token: 'the secret', label: null }, '**********']);

    // No longer secret: the mask is a plain string now, taken as the value (the secret is not moved into view).
    const plain = await ctx.api.put(`/workflows/${id}`, definition({ mode: 'plain', token: '********' }));
    expect([plain.status, plain.body.data?.steps?.[0]?.props]).toEqual([200, { mode: 'plain', token: '********' }]);
    expect((await runOf(id, plain.body.data.deployment_id)).steps[0].return_value).toEqual({ token: '********', label: null });
    const read = await ctx.api.get(`/workflows/${id}`);
    expect(JSON.stringify([kept.body, plain.body, read.body])).not.toContain('step-secret-1');
  });

  it('keeps a declared secret and $auth through the mask sent back; a plain prop takes the mask as its value, in a step and in a source alike', async () => {
    const values = { key: 'static-secret-2', slack: { $auth: { oauth_access_token: 'auth-secret-2' } }, note: 'shown-2' };
    const masks = { key: '********', slack: { $auth: '********' }, note: '********' };
    const step = (props: Record<string, unknown>) => ({ name: 'masks', trigger: { manual: {} }, steps: [{ name: 's', code: STATIC_STEP, props }] });
    const created = await ctx.api.post('/workflows', step(values));
    expect([created.status, created.body.data?.steps?.[0]?.props]).toEqual([200, { ...masks, note: 'shown-2' }]);
    const id = created.body.data.id;
    const sent = await ctx.api.put(`/workflows/${id}`, step(masks));
    expect([sent.status, sent.body.data?.steps?.[0]?.props]).toEqual([200, masks]);
    expect((await runOf(id, sent.body.data.deployment_id)).steps[0].return_value).toEqual({ key: true, auth: true, note: '********' });

    const source = await ctx.api.post('/sources', { component_code: STATIC_SOURCE, configured_props: values });
    expect([source.status, source.body.data?.configured_props]).toEqual([200, { ...masks, note: 'shown-2' }]);
    const updated = await ctx.api.put(`/sources/${source.body.data.id}`, { component_id: source.body.data.component_id, configured_props: masks });
    expect([updated.status, updated.body.data?.configured_props]).toEqual([200, masks]);
    // A run of the updated source emits what its code checked (the runner may run it on the former props a moment).
    const expected = JSON.stringify({ key: true, auth: true, note: '********' });
    const emitted = async () => ((await ctx.api.get(`/sources/${source.body.data.id}/event_summaries?expand=event&limit=100`)).body?.data ?? []) as { event: unknown }[];
    await eventually(async () => {
      expect((await ctx.api.post(`/sources/${source.body.data.id}/run`, { event: {} })).status).toBe(202);
      return eventually(async () => (await emitted()).some((e) => JSON.stringify(e.event) === expected), { timeoutMs: 15_000 }).catch(() => false);
    }, { what: 'an event of the updated source', timeoutMs: 120_000 });
  });

  it('refuses the mask for a secret or $auth that has no stored value to keep (a create, a step of a new name), in a step and in a source alike', async () => {
    const masked = { key: '********', slack: { $auth: { oauth_access_token: 'a' } }, note: 'n' };
    const auth = { key: 'k', slack: { $auth: '********' }, note: 'n' };
    const keep = (prop: string, what: string) => `"********" keeps the ${what} stored for ${prop}, and none is: give its value`;
    for (const [props, prop, what] of [[masked, 'key', 'secret'], [auth, 'slack', '$auth']] as const) {
      const step = await ctx.api.post('/workflows', { name: `no-mask-${prop}`, trigger: { manual: {} }, steps: [{ name: 's', code: STATIC_STEP, props }] });
      expect([step.status, step.body.code, step.body.details?.path, step.body.error]).toEqual([400, 'invalid_workflow', `steps[0].props.${prop}`, `steps[0].props.${prop}: ${keep(prop, what)}`]);
      const source = await ctx.api.post('/sources', { component_code: STATIC_SOURCE, configured_props: props });
      expect([source.status, source.body.code, source.body.details, source.body.error]).toEqual([400, 'invalid_props', { prop }, `configured_props.${prop}: ${keep(prop, what)}`]);
    }
    const created = await ctx.api.post('/workflows', { name: 'renamed', trigger: { manual: {} }, steps: [{ name: 'a', code: STATIC_STEP, props: { ...masked, key: 'k' } }] });
    expect(created.status).toBe(200);
    const renamed = await ctx.api.put(`/workflows/${created.body.data.id}`, { name: 'renamed', trigger: { manual: {} }, steps: [{ name: 'b', code: STATIC_STEP, props: masked }] });
    expect([renamed.status, renamed.body.details?.path]).toEqual([400, 'steps[0].props.key']);
  });
});
