import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * What a run's `$.send.*` calls hold in the runner: every step's sends are kept until the run ends (they are acted on
 * only after it succeeded), so a bound on each payload (EVENT_MAX_BYTES) and on their count (EMITS_PER_INVOCATION)
 * still let 50 steps each hand back a 64 MiB answer of sends, some 3 GiB for one run in the memory every account's
 * runs share. The sends of one run are bounded together (128 × EVENT_MAX_BYTES: 64 MiB at the default, what one
 * step may hand back), as its steps' return values and exports are.
 */
const step = (body: string) => `export default defineComponent({ async run({ steps, $ }) { ${body} } });`;
const EVENT_MAX_BYTES = 64 * 1024;

type Run = { status: string; failed_step: string | null; steps: { name: string; error?: { name: string; message: string } }[] };

describe("a workflow run's sends, all steps together", () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;

  beforeAll(async () => {
    system = await startSystem({ EVENT_MAX_BYTES: String(EVENT_MAX_BYTES) });
    a = createUser(system);
    b = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const runsOf = async (user: TestUser, id: string): Promise<Run[]> => ((await client(system, user.apiKey).get(`/workflows/${id}/runs`)).body?.data ?? []) as Run[];
  const runOnce = async (user: TestUser, name: string, steps: { name: string; code: string }[]): Promise<{ id: string; run: Run }> => {
    const created = await client(system, user.apiKey).post('/workflows', { name, trigger: { manual: {} }, steps });
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    expect((await client(system, user.apiKey).post(`/workflows/${id}/run`, {})).status).toBe(202);
    return { id, run: await eventually(async () => (await runsOf(user, id))[0], { what: `the run of ${name}`, timeoutMs: 30_000 }) };
  };

  it('fails the step whose sends take the run over 128 × EVENT_MAX_BYTES, and sends nothing of it', async () => {
    // Each send fits EVENT_MAX_BYTES and the run's count; steps of 50 such sends each (emit, sse, http) pile up.
    const piling = step(`const s = "z".repeat(${EVENT_MAX_BYTES - 4096}); for (let i = 0; i < 10; i++) { for (let j = 0; j < 3; j++) $.send.emit({ raw_event: s }); $.send.sse({ channel: "c", payload: s }); $.send.http({ url: "http://127.0.0.1:9/x", data: s }); }`);
    const { id, run } = await runOnce(a, 'piled-sends', Array.from({ length: 4 }, (_, i) => ({ name: `s${i}`, code: piling })));
    const message = `the $.send.* payloads of this run's steps together are over ${128 * EVENT_MAX_BYTES} bytes of JSON (128 × EVENT_MAX_BYTES)`;
    expect({ status: run.status, failed: run.failed_step, error: run.steps[2]?.error, ran: run.steps.length }).toEqual({ status: 'error', failed: 's2', error: { name: 'SendsSizeLimitError', message }, ran: 3 });
    const errors = (await client(system, a.apiKey).get(`/workflows/${id}/$errors/event_summaries`)).body.data;
    expect(errors).toHaveLength(1);
    expect((await client(system, a.apiKey).get(`/workflows/${id}/event_summaries`)).body.data).toEqual([]);
  });

  it('runs a workflow whose sends stay within the bound, and the other account\'s workflows meanwhile', async () => {
    const { id, run } = await runOnce(a, 'sends-fit', [
      { name: 's0', code: step(`const s = "y".repeat(${EVENT_MAX_BYTES - 4096}); for (let i = 0; i < 60; i++) $.send.sse({ channel: "c", payload: s });`) },
      { name: 's1', code: step(`const s = "y".repeat(${EVENT_MAX_BYTES - 4096}); for (let i = 0; i < 60; i++) $.send.sse({ channel: "c", payload: s }); $.send.emit({ raw_event: "last" });`) },
    ]);
    expect(run.status).toBe('success');
    await eventually(async () => (await client(system, a.apiKey).get(`/workflows/${id}/event_summaries`)).body.data?.length === 1, { what: 'the emit', timeoutMs: 30_000 });
    const other = await runOnce(b, 'b-sends', [{ name: 's0', code: step('$.send.emit({ raw_event: 1 });') }]);
    expect(other.run.status).toBe('success');
  });
});
