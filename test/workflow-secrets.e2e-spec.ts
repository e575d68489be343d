import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * A workflow's secrets, its steps' secret props and app `$auth` never show in what a run records — the run
 * record's inputs, return values, exports and errors, `$logs`, `$errors`, the 502 an HTTP caller gets — whatever
 * the step does with them (logs them, returns them, throws them, JSON-encodes them); what a step passes on to
 * later steps and sends is left as it gave it.
 */
const TOKEN = 'tok-"quoted"-7f3a9c';
const API_KEY = 'apikey-51b2e8d4';
const OAUTH = 'oauth-c0ffee-1234';

const LEAK = `export default defineComponent({
  props: { token: { type: "string" }, key: { type: "string", secret: true }, slack: { type: "app", app: "slack" } },
  async run({ steps, $ }) {
    const all = [this.token, this.key, this.slack.$auth.oauth_access_token];
    console.log("token", this.token, JSON.stringify({ all }));
    $.export("leaked", { [this.key]: all });
    $.export("$summary", "used " + this.key);
    return all.join(" ");
  },
});`;
const PASS_ON = `export default defineComponent({
  props: { got: { type: "string" } },
  async run({ steps, $ }) {
    $.send.emit({ raw_event: { got: this.got, earlier: steps.leak.$return_value } });
    throw new Error("failed with " + this.got + " " + JSON.stringify(steps.leak.leaked));
  },
});`;
const FAIL_BEFORE_RESPOND = `export default defineComponent({
  props: { token: { type: "string" } },
  async run({ steps, $ }) { throw new Error("cannot call the api with " + this.token); },
});`;

describe('workflow secrets in what a run records', () => {
  let system: System;
  let a: TestUser;

  beforeAll(async () => {
    system = await startSystem();
    a = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const api = () => client(system, a.apiKey);
  const hidden = (text: string): void => {
    // A distinct part of each value: it shows however many times the text was JSON-encoded.
    for (const part of ['7f3a9c', '51b2e8d4', 'c0ffee-1234']) expect(text).not.toContain(part);
  };

  it('masks secrets, secret props and $auth in run records, $logs and $errors, and passes them on to later steps as they are', async () => {
    const wf = (
      await api().post('/workflows', {
        name: 'leaky',
        trigger: { manual: {} },
        secrets: { TOKEN },
        steps: [
          { name: 'leak', code: LEAK, props: { token: 'Bearer {{secrets.TOKEN}}', key: API_KEY, slack: { $auth: { oauth_access_token: OAUTH } } } },
          { name: 'pass_on', code: PASS_ON, props: { got: '{{steps.leak.$return_value}}' } },
        ],
      })
    ).body.data;
    expect((await api().post(`/workflows/${wf.id}/run`, { event: { n: 1 } })).status).toBe(202);
    const [run] = await eventually(async () => ((await api().get(`/workflows/${wf.id}/runs`)).body.data as unknown[]).length && (await api().get(`/workflows/${wf.id}/runs`)).body.data, { what: 'the run record', timeoutMs: 30_000 });
    expect(run).toEqual(expect.objectContaining({ status: 'error', failed_step: 'pass_on' }));
    const mask = '**********';
    expect(run.steps[0].return_value).toBe(`Bearer ${mask} ${mask} ${mask}`);
    expect(run.steps[0].exports).toEqual({ leaked: { [mask]: [`Bearer ${mask}`, mask, mask] }, $summary: `used ${mask}` });
    expect(run.steps[0].inputs).toEqual({ token: `Bearer ${mask}`, key: mask, slack: { $auth: mask } });
    expect(run.steps[1].inputs).toEqual({ got: `Bearer ${mask} ${mask} ${mask}` });
    expect(run.steps[1].error.message).toContain(`failed with Bearer ${mask}`);

    const errors = await eventually(async () => (await api().get(`/workflows/${wf.id}/$errors/event_summaries?expand=event`)).body.data[0], { what: 'the $errors event' });
    expect(errors.event.error.stack).toContain(`failed with Bearer ${mask}`);
    const logs = (await api().get(`/workflows/${wf.id}/event_summaries?event_name=$logs&expand=event&limit=100`)).body.data as { event: { k: string; msg: string } }[];
    expect(logs.find((l) => l.event.k === 'console.log')?.event.msg).toContain(`token Bearer ${mask}`);
    for (const text of [JSON.stringify(run), JSON.stringify(errors), JSON.stringify(logs)]) hidden(text);
  });

  it('keeps the values a step sends: a successful run emits what it was given', async () => {
    const wf = (
      await api().post('/workflows', {
        name: 'sender',
        trigger: { manual: {} },
        secrets: { TOKEN },
        steps: [{ name: 'send', code: 'export default defineComponent({ props: { t: { type: "string" } }, async run({ $ }) { $.send.emit({ raw_event: { t: this.t } }); return this.t; } });', props: { t: '{{secrets.TOKEN}}' } }],
      })
    ).body.data;
    expect((await api().post(`/workflows/${wf.id}/run`, {})).status).toBe(202);
    const [emitted] = await eventually(async () => (await api().get(`/workflows/${wf.id}/event_summaries?expand=event`)).body.data.length && (await api().get(`/workflows/${wf.id}/event_summaries?expand=event`)).body.data, { what: 'the emit' });
    expect(emitted.event).toEqual({ raw_event: { t: TOKEN } });
    const [run] = (await api().get(`/workflows/${wf.id}/runs`)).body.data;
    expect(run.steps[0].return_value).toBe('**********');
  });

  it('does not run a workflow with more than 64 values to hide (each is searched for in every record of every run)', async () => {
    const secrets = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`S${i}`, `value-${i}-${'k'.repeat(20)}`]));
    const wf = (await api().post('/workflows', { name: 'many-secrets', trigger: { manual: {} }, secrets, steps: [{ name: 's', code: 'export default defineComponent({ async run() { return 1; } });' }] })).body.data;
    expect((await api().post(`/workflows/${wf.id}/run`, {})).status).toBe(202);
    const [run] = await eventually(async () => (await api().get(`/workflows/${wf.id}/runs`)).body.data.length && (await api().get(`/workflows/${wf.id}/runs`)).body.data, { what: 'the run record', timeoutMs: 30_000 });
    expect(run.status).toBe('error');
    const [error] = (await api().get(`/workflows/${wf.id}/$errors/event_summaries?expand=event`)).body.data;
    expect(error.event.error.code).toBe('SecretsError');
    expect(error.event.error.stack).toContain('65 values to hide from its records, more than 64');
    expect((await api().put(`/workflows/${wf.id}`, { name: 'many-secrets', trigger: { manual: {} }, secrets: { S64: null }, steps: [{ name: 's', code: 'export default defineComponent({ async run() { return 1; } });' }] })).status).toBe(200);
    expect((await api().post(`/workflows/${wf.id}/run`, {})).status).toBe(202);
    await eventually(async () => (await api().get(`/workflows/${wf.id}/runs`)).body.data[0]?.status === 'success', { what: 'a run with 64 values', timeoutMs: 30_000 });
  });

  it("does not tell an HTTP trigger's caller a secret in the error of a run that failed before responding", async () => {
    const wf = (
      await api().post('/workflows', {
        name: 'fails-first',
        trigger: { http: { customResponse: true } },
        secrets: { TOKEN },
        steps: [{ name: 'call', code: FAIL_BEFORE_RESPOND, props: { token: '{{secrets.TOKEN}}' } }],
      })
    ).body.data;
    const res = await eventually(async () => {
      const r = await fetch(wf.trigger.endpoint_url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
      return r.status === 502 ? r : undefined;
    }, { what: 'the 502 of the failed run', timeoutMs: 30_000 });
    const body = await res.text();
    expect(body).toContain('cannot call the api with **********');
    hidden(body);
  });
});
