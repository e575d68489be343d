import { connect } from 'nats';
import { Names } from '@app/contracts';
import { client, createUser, TestUser } from './support/accounts';
import { natsAdmin } from './support/env';
import { eventually, startSystem, System } from './support/system';
import { openText } from './support/sse-stream';

/**
 * A hostile tenant's workflows against the runner: step outputs, sends, errors and dbs of any size
 * and count end as a recorded run (an `$errors` event for a failed one) instead of a run that can
 * never be stored and is retried forever; `$.flow.exit()` inside a try/catch still ends the run;
 * reserved step and export names are refused; a run the runner itself cannot store is recorded as failed
 * (RunnerError) after a few tries. Another account's workflow keeps running throughout.
 */
const step = (body: string, props = '') => `export default defineComponent({ ${props} async run({ steps, $ }) { ${body} } });`;
const EVENT_MAX_BYTES = 64 * 1024;
const EMITS = 100;

type Run = { status: string; failed_step: string | null; steps: { name: string; error?: { name: string; message: string }; return_value?: unknown; exports?: Record<string, unknown> }[] };

describe('workflows against a hostile tenant', () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;
  let sentinel: string;

  beforeAll(async () => {
    system = await startSystem({ EVENT_MAX_BYTES: String(EVENT_MAX_BYTES), EMITS_PER_INVOCATION: String(EMITS) });
    a = createUser(system);
    b = createUser(system);
    const res = await client(system, b.apiKey).post('/workflows', { name: 'b-sentinel', trigger: { manual: {} }, steps: [{ name: 'echo', code: step('$.send.emit({ raw_event: steps.trigger.event }); return steps.trigger.event;') }] });
    expect(res.status).toBe(200);
    sentinel = res.body.data.id;
  });
  afterAll(async () => {
    await system?.stop();
  });

  const api = () => client(system, a.apiKey);
  const runsOf = async (user: TestUser, id: string): Promise<Run[]> => ((await client(system, user.apiKey).get(`/workflows/${id}/runs`)).body?.data ?? []) as Run[];
  const create = async (name: string, steps: { name: string; code: string }[]): Promise<string> => {
    const res = await api().post('/workflows', { name, trigger: { manual: {} }, steps });
    expect(res.status).toBe(200);
    return res.body.data.id as string;
  };
  /** Runs a workflow once and waits for its run record. */
  const runOnce = async (id: string): Promise<Run> => {
    expect((await api().post(`/workflows/${id}/run`, { event: { n: 1 } })).status).toBe(202);
    return eventually(async () => (await runsOf(a, id))[0], { what: `the run record of ${id}`, timeoutMs: 30_000 });
  };
  const sentinelStillRuns = async (n: number): Promise<void> => {
    expect((await client(system, b.apiKey).post(`/workflows/${sentinel}/run`, { event: { n } })).status).toBe(202);
    await eventually(async () => (await runsOf(b, sentinel)).some((r) => r.status === 'success' && r.steps[0]?.return_value && (r.steps[0].return_value as { n: number }).n === n), { what: "the other account's workflow run", timeoutMs: 30_000 });
  };

  it('fails a step whose export, return value or send is over EVENT_MAX_BYTES, or that sends over EMITS_PER_INVOCATION in a run, with a recorded error', async () => {
    const big = `"x".repeat(${EVENT_MAX_BYTES + 10})`;
    const cases: [string, string, string][] = [
      ['export', `$.export("big", ${big});`, 'ExportSizeLimitError'],
      ['return', `return ${big};`, 'ReturnValueSizeLimitError'],
      ['emit', `$.send.emit({ raw_event: ${big} });`, 'SendSizeLimitError'],
      ['http', `$.send.http({ url: "http://127.0.0.1:9/x", data: ${big} });`, 'SendSizeLimitError'],
    ];
    const ids = await Promise.all(cases.map(([what, body]) => create(`big-${what}`, [{ name: 's1', code: step(body) }, { name: 's2', code: step('return 1;') }])));
    for (const [i, [what, , error]] of cases.entries()) {
      const run = await runOnce(ids[i]);
      expect({ what, status: run.status, failed: run.failed_step, error: run.steps[0].error?.name, steps: run.steps.length }).toEqual({ what, status: 'error', failed: 's1', error, steps: 1 });
      const errors = (await api().get(`/workflows/${ids[i]}/$errors/event_summaries?expand=event`)).body.data;
      expect(errors).toHaveLength(1);
    }
    // The send budget is the run's, not each step's: 60 sends and 60 more fail the second step.
    const many = await create('many-sends', [{ name: 's1', code: step('for (let i = 0; i < 60; i++) $.send.emit({ raw_event: i });') }, { name: 's2', code: step('for (let i = 0; i < 60; i++) $.send.http({ url: "http://127.0.0.1:9/x" });') }]);
    const run = await runOnce(many);
    expect({ status: run.status, failed: run.failed_step, error: run.steps[1]?.error?.name }).toEqual({ status: 'error', failed: 's2', error: 'SendLimitError' });
    expect((await api().get(`/workflows/${many}/event_summaries`)).body.data).toEqual([]);
    await sentinelStillRuns(1);
  });

  it("fails a step whose templates insert more than 4 × EVENT_MAX_BYTES (one event named thousands of times), and the runner stays up", async () => {
    const props = (names: string[], value: unknown): { code: string; props: Record<string, unknown> } => ({
      code: step('return Object.keys(this).length;', `props: { ${names.map((n) => `${n}: { type: "any" }`).join(', ')} },`),
      props: Object.fromEntries(names.map((n) => [n, value])),
    });
    const event = { blob: 'x'.repeat(EVENT_MAX_BYTES - 4096) };
    const cases: [string, { code: string; props: Record<string, unknown> }][] = [
      // 200 references to a 60 KiB event: 12 MiB once copied.
      ['a few hundred', props(['p0'], Array(200).fill('{{trigger.event}}'))],
      // Eight props of 2,400 each, about the most one step's props document holds: 1.2 GiB once copied.
      ['as many as fit', props(['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7'], Array(2400).fill('{{steps.trigger.event}}'))],
      ['inside text', props(['p0'], 'x{{trigger.event}}'.repeat(3000))],
    ];
    for (const [what, s1] of cases) {
      const res = await api().post('/workflows', { name: `templates ${what}`, trigger: { manual: {} }, steps: [{ name: 's1', ...s1 }] });
      expect([what, res.status]).toEqual([what, 200]);
      expect((await api().post(`/workflows/${res.body.data.id}/run`, { event })).status).toBe(202);
      const run = await eventually(async () => (await runsOf(a, res.body.data.id))[0], { what: `the run of ${what}`, timeoutMs: 30_000 });
      expect({ what, status: run.status, error: run.steps[0].error }).toEqual({ what, status: 'error', error: { name: 'TemplateError', message: `the templates of these props insert more than ${4 * EVENT_MAX_BYTES} bytes of JSON` } });
    }
    // A step within the bound runs: the event three times.
    const fits = await api().post('/workflows', { name: 'templates fit', trigger: { manual: {} }, steps: [{ name: 's1', ...props(['p0', 'p1'], ['{{trigger.event}}', '{{trigger.event}}']) }, { name: 's2', ...props(['p0'], '{{trigger.event.blob}}') }] });
    expect((await api().post(`/workflows/${fits.body.data.id}/run`, { event })).status).toBe(202);
    expect((await eventually(async () => (await runsOf(a, fits.body.data.id))[0], { what: 'the run that fits', timeoutMs: 30_000 })).status).toBe('success');
    await sentinelStillRuns(7);
  });

  it('fails the step whose return value and exports take the steps of its run over 16 × EVENT_MAX_BYTES together', async () => {
    // Each export fits EVENT_MAX_BYTES, and one step's result fits what a sandbox may answer; 50 such steps piled up in the runner.
    const wide = step(`const s = "z".repeat(${EVENT_MAX_BYTES - 4096}); for (let i = 0; i < 5; i++) $.export("e" + i, s); return Object.keys(steps).length;`);
    const id = await create('piled-exports', Array.from({ length: 5 }, (_, i) => ({ name: `s${i}`, code: wide })));
    const run = await runOnce(id);
    const message = `the return values and exports of this run's steps together are over ${16 * EVENT_MAX_BYTES} bytes of JSON (16 × EVENT_MAX_BYTES)`;
    expect({ status: run.status, failed: run.failed_step, error: run.steps[3]?.error, ran: run.steps.length }).toEqual({ status: 'error', failed: 's3', error: { name: 'StepsSizeLimitError', message }, ran: 4 });
    await sentinelStillRuns(8);
  });

  it("keeps 1,000 lines and 2 MiB of console output per run, whatever its steps print (each step alone may print 1,000 lines of 16 KB)", async () => {
    /** The $logs of one run of a new workflow, as its observations stream shows them. */
    const logsOfRun = async (name: string, steps: { name: string; code: string }[]): Promise<string> => {
      const id = await create(name, steps);
      const stream = await openText(system, `/sse/p/${id}/observations`, a.apiKey);
      try {
        await eventually(async () => stream.text().includes(':sse-handshake'), { what: 'the stream' });
        expect((await runOnce(id)).status).toBe('success');
        await eventually(async () => stream.text().includes('"k":"run"'), { what: 'the run record on the stream', timeoutMs: 30_000 });
      } finally {
        stream.close();
      }
      return stream.text();
    };
    const many = await logsOfRun('chatty', [0, 1, 2].map((i) => ({ name: `s${i}`, code: step('for (let i = 0; i < 600; i++) console.log("line " + i);') })));
    expect(many.match(/"k":"console\.log"/g)?.length).toBe(1000);
    expect(many).toContain('"msg":"800 more lines of console output dropped (a run keeps 1000 lines, 2097152 characters)"');
    const long = await logsOfRun('verbose', [{ name: 's0', code: step('for (let i = 0; i < 200; i++) console.log("v".repeat(16000));') }]);
    expect(long.match(/"k":"console\.log"/g)?.length).toBe(131);
    expect(long).toContain('"msg":"69 more lines of console output dropped');
  });

  it('records a run whose steps together, or whose error, are larger than one stored event', async () => {
    // Each return value fits EVENT_MAX_BYTES; fifteen of them (within the run's 16 × EVENT_MAX_BYTES) do not fit one run record.
    const near = `return "y".repeat(${EVENT_MAX_BYTES - 1024});`;
    const id = await create('wide', Array.from({ length: 15 }, (_, i) => ({ name: `s${i}`, code: step(near) })));
    const run = await runOnce(id);
    expect(run.status).toBe('success');
    expect(run.steps).toHaveLength(15);
    expect(run.steps.filter((s) => (s.return_value as { $truncated?: number })?.$truncated === EVENT_MAX_BYTES - 1024 + 2).length).toBeGreaterThan(0);
    // An error with a message of megabytes.
    const loud = await create('loud', [{ name: 'throws', code: step('throw new Error("e".repeat(3_000_000));') }]);
    const failed = await runOnce(loud);
    expect(failed.status).toBe('error');
    expect(failed.steps[0].error?.message.length).toBeLessThan(3000);
    const errors = (await api().get(`/workflows/${loud}/$errors/event_summaries?expand=event`)).body.data;
    expect(errors).toHaveLength(1);
    await sentinelStillRuns(2);
  });

  it("keeps every step's $.service.db together within one stored state", async () => {
    const DB = 'props: { db: "$.service.db" },';
    const write = step('this.db.set("v", "d".repeat(600 * 1024)); return 1;', DB);
    const id = await create('fat-dbs', [{ name: 'one', code: write }, { name: 'two', code: write }]);
    const run = await runOnce(id);
    expect({ status: run.status, failed: run.failed_step, error: run.steps[1]?.error?.name }).toEqual({ status: 'error', failed: 'two', error: 'DbSizeLimitError' });
    // The state was saved: a second run sees the first step's db and runs again (not a retried first run).
    expect((await api().post(`/workflows/${id}/run`, { event: { n: 2 } })).status).toBe(202);
    await eventually(async () => (await runsOf(a, id)).length === 2, { what: 'the second run', timeoutMs: 30_000 });
    await sentinelStillRuns(3);
  });

  it('keeps a $.service.db key named __proto__ as a key like any other, from one run to the next', async () => {
    const code = step('const seen = { proto: this.db.get("__proto__") ?? null, k: this.db.get("k") ?? null }; this.db.set("__proto__", { polluted: true }); this.db.set("k", "v"); return seen;', 'props: { db: "$.service.db" },');
    const id = await create('proto-db', [{ name: 'one', code }]);
    expect((await runOnce(id)).steps[0].return_value).toEqual({ proto: null, k: null });
    expect((await api().post(`/workflows/${id}/run`, { event: { n: 2 } })).status).toBe(202);
    const second = await eventually(async () => (await runsOf(a, id)).find((r) => r !== undefined && (r.steps[0]?.return_value as { k: unknown } | undefined)?.k !== null), { what: 'the second run', timeoutMs: 30_000 });
    // The key was once assigned into the step's db object, set its prototype instead and was lost with the stored state.
    expect(second.steps[0].return_value).toEqual({ proto: { polluted: true }, k: 'v' });
  });

  it('ends the run at $.flow.exit() even when the step catches it', async () => {
    const id = await create('exit-caught', [
      { name: 'leave', code: step('try { $.flow.exit("done"); } catch (e) { /* swallowed */ } return "after";') },
      { name: 'later', code: step('$.send.emit({ raw_event: "later ran" });') },
    ]);
    const run = await runOnce(id);
    expect({ status: run.status, steps: run.steps.map((s) => s.name) }).toEqual({ status: 'exit', steps: ['leave'] });
    // The run record says which step left and why (docs/workflows.md, GET /v1/workflows/{id}/runs).
    expect(run.steps[0]).toEqual(expect.objectContaining({ exit: { reason: 'done' }, return_value: 'after', exports: {} }));
    expect((await api().get(`/workflows/${id}/event_summaries`)).body.data).toEqual([]);
    const bare = await runOnce(await create('exit-bare', [{ name: 'leave', code: step('$.flow.exit();') }]));
    expect(bare.status).toBe('exit');
    expect(bare.steps[0]).toEqual(expect.objectContaining({ exit: {} }));
    expect(bare.steps[0]).not.toHaveProperty('return_value');
  });

  it('names what a toJSON or getter of a returned or exported value threw, an Error or not', async () => {
    const cases: [string, string][] = [
      ['return { toJSON() { throw "tojson boom"; } };', 'the return value of run: the value is not JSON-serializable (tojson boom)'],
      ['return { get x() { throw new Error("getter boom"); } };', 'the return value of run: the value is not JSON-serializable (getter boom)'],
      ['$.export("e", { toJSON() { throw 42; } });', '$.export("e"): the value is not JSON-serializable (42)'],
    ];
    for (const [i, [body, message]] of cases.entries()) {
      const run = await runOnce(await create(`tojson-${i}`, [{ name: 'one', code: step(body) }]));
      expect({ body, error: run.steps[0].error }).toEqual({ body, error: { name: 'TypeError', message } });
    }
  });

  it('refuses a cron trigger that is not a 5-field expression (a 6th field, seconds, would fire under TIMER_MIN_INTERVAL_SECONDS)', async () => {
    for (const cron of ['* * * * * *', 'every day please']) {
      const res = await api().post('/workflows', { name: `cron-${cron.length}`, trigger: { timer: { cron } }, steps: [{ name: 's', code: step('return 1;') }] });
      expect({ cron, status: res.status, code: res.body.code, details: res.body.details }).toEqual({ cron, status: 400, code: 'invalid_workflow', details: { path: 'trigger.timer.cron' } });
    }
  });

  it('answers the caller once: $.respond() in a later step fails that step', async () => {
    const res = await api().post('/workflows', {
      name: 'respond-twice',
      trigger: { http: { customResponse: true } },
      steps: [{ name: 'first', code: step('await $.respond({ status: 200, body: "first" });') }, { name: 'second', code: step('await $.respond({ status: 201, body: "second" });') }],
    });
    expect(res.status).toBe(200);
    const answer = await fetch(res.body.data.trigger.endpoint_url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect({ status: answer.status, body: await answer.text() }).toEqual({ status: 200, body: 'first' });
    const run = await eventually(async () => (await runsOf(a, res.body.data.id))[0], { what: 'the run record', timeoutMs: 30_000 });
    expect({ status: run.status, failed: run.failed_step, error: run.steps[1]?.error }).toEqual({ status: 'error', failed: 'second', error: { name: 'Error', message: 'respond() was already called for this request (by an earlier step)' } });
  });

  it('refuses reserved step and export names', async () => {
    const res = await api().post('/workflows', { name: 'proto', trigger: { manual: {} }, steps: [{ name: '__proto__', code: step('return 1;') }] });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'steps[0].name: "__proto__" is reserved', code: 'invalid_workflow', details: { path: 'steps[0].name' } });
    for (const name of ['__proto__', '$return_value']) {
      const id = await create(`export-${name.replace(/\W/g, '')}`, [{ name: 's1', code: step(`$.export(${JSON.stringify(name)}, { polluted: true }); return 1;`) }]);
      const run = await runOnce(id);
      expect({ status: run.status, error: run.steps[0].error }).toEqual({ status: 'error', error: { name: 'TypeError', message: `$.export("${name}"): "${name}" is a reserved name` } });
    }
  });

  it('records a run the runner cannot store (its run record over the EMITS stream\'s max_msg_size) as failed with a RunnerError, instead of running it again every second', async () => {
    const nc = await connect(natsAdmin());
    const jsm = await nc.jetstreamManager({ checkAPI: false });
    const emits = new Names(system.natsPrefix).emitsStream;
    const { config } = await jsm.streams.info(emits);
    await jsm.streams.update(emits, { ...config, max_msg_size: 8 * 1024 });
    try {
      const id = await create('unstorable', [{ name: 'big', code: step("return 'x'.repeat(16 * 1024);") }]);
      expect((await api().post(`/workflows/${id}/run`, { event: { n: 1 } })).status).toBe(202);
      const [error] = await eventually(async () => {
        const list = (await api().get(`/workflows/${id}/$errors/event_summaries?expand=event`)).body.data as { event: { error: Record<string, unknown> } }[];
        return list.length ? list : undefined;
      }, { what: 'the RunnerError of the run', timeoutMs: 60_000 });
      expect(error.event.error).toMatchObject({ code: 'RunnerError', stack: 'RunnerError: the runner could not handle this run: publish failed: message size exceeds maximum allowed' });
      const run = await eventually(async () => (await runsOf(a, id))[0], { what: 'the run record', timeoutMs: 30_000 });
      expect({ status: run.status, failed_step: run.failed_step, steps: run.steps }).toEqual({ status: 'error', failed_step: null, steps: [] });
    } finally {
      await jsm.streams.update(emits, config);
      await nc.close();
    }
    await sentinelStillRuns(7);
  });
});
