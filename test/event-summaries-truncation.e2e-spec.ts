import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/** A step that emits its trigger event, or throws when asked to. */
const STEP = `export default defineComponent({
  async run({ steps, $ }) {
    if (steps.trigger.event.fail) throw new Error("boom");
    $.send.emit({ raw_event: steps.trigger.event });
  },
});`;
const THROWING_SOURCE = 'module.exports = { name: "Thrower", version: "1", props: {}, async run(event) { throw new Error("source boom"); } };';

type Summary = { id: string; event: Record<string, unknown> };

/**
 * The spec's event summaries keep their shape when their data is over 1 KB: a workflow's emit stays
 * `{ raw_event }` and an `$errors` event keeps `error` and `original_context`; only the data itself
 * (`raw_event`, `original_event`) is replaced by the truncation marker unless `expand=event`.
 */
describe('truncated event summaries keep the shape the spec gives them', () => {
  let system: System;
  let user: TestUser;
  let api: ReturnType<typeof client>;
  const note = 'n'.repeat(3000);

  beforeAll(async () => {
    system = await startSystem();
    user = createUser(system);
    api = client(system, user.apiKey);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const listed = (path: string): Promise<Summary[]> =>
    eventually(async () => {
      const data = (await api.get(path)).body.data as Summary[];
      return data.length ? data : undefined;
    }, { what: path, timeoutMs: 60_000 });
  const marker = (data: unknown) => ({ $truncated: true, size_bytes: Buffer.byteLength(JSON.stringify(data)), preview: JSON.stringify(data).slice(0, 1024) });

  it("truncates a workflow's raw_event and original_event, not the fields around them", async () => {
    const wf = (await api.post('/workflows', { name: 'big', trigger: { manual: {} }, steps: [{ name: 'emit', code: STEP }] })).body.data;
    expect(wf.id).toMatch(/^p_/);
    expect((await api.post(`/workflows/${wf.id}/run`, { event: { note } })).status).toBe(202);
    expect((await api.post(`/workflows/${wf.id}/run`, { event: { note, fail: true } })).status).toBe(202);

    const [emit] = await listed(`/workflows/${wf.id}/event_summaries`);
    expect(emit.event).toEqual({ raw_event: marker({ note }) });
    expect((await api.get(`/workflows/${wf.id}/event_summaries?expand=event`)).body.data[0].event).toEqual({ raw_event: { note } });

    const [error] = await listed(`/workflows/${wf.id}/$errors/event_summaries`);
    // The preview is the event as it was sent: its keys in their order.
    expect(error.event).toEqual({
      original_event: marker({ note, fail: true }),
      original_context: expect.objectContaining({ workflow_id: wf.id, deployment_id: wf.deployment_id, source_type: 'MANUAL', verified: false }),
      error: expect.objectContaining({ code: 'Error', cellId: wf.steps[0].cell_id, stack: expect.stringContaining('boom') }),
    });
    const full = (await api.get(`/workflows/${wf.id}/$errors/event_summaries?expand=event`)).body.data[0].event;
    expect(full).toEqual({ ...error.event, original_event: { note, fail: true } });
  });

  it('keeps error and original_context of an $errors event whole when the error is over 1 KB (a long message, a deep stack)', async () => {
    const LONG = 'export default defineComponent({ async run() { throw new TypeError("long ".repeat(300)); } });';
    const wf = (await api.post('/workflows', { name: 'long-error', trigger: { manual: {} }, steps: [{ name: 'fail', code: LONG }] })).body.data;
    expect((await api.post(`/workflows/${wf.id}/run`, { event: { a: 1 } })).status).toBe(202);
    const [error] = await listed(`/workflows/${wf.id}/$errors/event_summaries`);
    expect(Buffer.byteLength(JSON.stringify(error.event.error))).toBeGreaterThan(1024);
    expect(error.event).toEqual({
      original_event: { a: 1 },
      original_context: expect.objectContaining({ workflow_id: wf.id, verified: false }),
      error: { code: 'TypeError', cellId: wf.steps[0].cell_id, ts: expect.stringMatching(/Z$/), stack: expect.stringContaining('long long') },
    });

    const source = (await api.post('/sources', { component_code: THROWING_SOURCE.replace('"source boom"', '"source " + "boom ".repeat(300)') })).body.data.id as string;
    expect((await api.post(`/sources/${source}/run`, { event: { note } })).status).toBe(202);
    const [sourceError] = await listed(`/sources/${source}/event_summaries?event_name=$errors`);
    expect(sourceError.event).toEqual({ error: expect.objectContaining({ name: 'Error', message: expect.stringMatching(/^source (boom ){300}$/) }), original_event: marker({ note }), ts: expect.any(Number) });

    // A source's error may be 64 K characters of message and as much of stack: past 64 KiB it is cut as any field.
    const huge = (await api.post('/sources', { component_code: THROWING_SOURCE.replace('"source boom"', '"x".repeat(60000)') })).body.data.id as string;
    expect((await api.post(`/sources/${huge}/run`, { event: { a: 1 } })).status).toBe(202);
    const [hugeError] = await listed(`/sources/${huge}/event_summaries?event_name=$errors`);
    expect(hugeError.event).toEqual({ error: { $truncated: true, size_bytes: expect.any(Number), preview: expect.stringMatching(/^\{"name":"Error","message":"x{50}/) }, original_event: { a: 1 }, ts: expect.any(Number) });
    expect((hugeError.event.error as { size_bytes: number }).size_bytes).toBeGreaterThan(64 * 1024);
  });

  it("keeps a source's $errors event readable and truncates its original_event", async () => {
    const source = (await api.post('/sources', { component_code: THROWING_SOURCE })).body.data.id as string;
    expect((await api.post(`/sources/${source}/run`, { event: { note } })).status).toBe(202);
    const [error] = await listed(`/sources/${source}/event_summaries?event_name=$errors`);
    expect(error.event).toEqual({ error: expect.objectContaining({ message: 'source boom' }), original_event: marker({ note }), ts: expect.any(Number) });
    // A source's own emits are the data itself: the marker replaces the whole event, as before.
  });
});
