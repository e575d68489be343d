import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * What one account's workflow runs in progress hold in the runner's memory together. A run keeps its steps' sends,
 * return values and exports until it ends, each run bounded on its own; but an account may have any number of runs
 * waiting in a later step, and 80 runs of 45 MB of sends each, sleeping in their second step, held 3.6 GB of the
 * runner every account's runs share. Now the step that would take its account's runs in progress on a runner past
 * 512 × EVENT_MAX_BYTES fails, and what a run held is given back once it is published.
 */
const EVENT_MAX_BYTES = 64 * 1024;
const step = (body: string) => `export default defineComponent({ async run({ steps, $ }) { ${body} } });`;
const STEPS = [
  // About 6 MiB of sends (the run's own bound is 128 × 64 KiB = 8 MiB), then a wait in the next step.
  { name: 'send', code: step(`const s = "v".repeat(${EVENT_MAX_BYTES - 4096}); for (let i = 0; i < 100; i++) $.send.sse({ channel: "c", payload: s });`) },
  { name: 'wait', code: step('await new Promise((r) => setTimeout(r, 6000));') },
];
type Run = { status: string; failed_step: string | null; steps: { error?: { name: string; message: string } }[] };

describe("what one account's workflow runs in progress hold in the runner", () => {
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

  const workflow = async (user: TestUser, name: string): Promise<string> => {
    const res = await client(system, user.apiKey).post('/workflows', { name, trigger: { manual: {} }, steps: STEPS });
    expect(res.status).toBe(200);
    return res.body.data.id as string;
  };
  const run = async (user: TestUser, id: string): Promise<void> => {
    expect((await client(system, user.apiKey).post(`/workflows/${id}/run`, {})).status).toBe(202);
  };
  const runsOf = async (user: TestUser, id: string, n: number): Promise<Run[]> =>
    eventually(async () => {
      const runs = (await client(system, user.apiKey).get(`/workflows/${id}/runs?limit=100`)).body.data as Run[] | undefined;
      return runs && runs.length >= n ? runs : undefined;
    }, { what: `${n} runs of ${id}`, timeoutMs: 60_000 });

  it("fails the step that would take its account's runs past 512 × EVENT_MAX_BYTES; another account's runs are not counted", async () => {
    const [mine, theirs] = [await workflow(a, 'a-holds'), await workflow(b, 'b-holds')];
    // Six runs of A at once: five hold 30 MiB, the sixth's sends would take A past 32 MiB. B's three run beside them.
    for (let i = 0; i < 6; i++) await run(a, mine);
    for (let i = 0; i < 3; i++) await run(b, theirs);
    const ofA = await runsOf(a, mine, 6);
    const message = `this account's workflow runs in progress on this runner would hold more than ${512 * EVENT_MAX_BYTES} bytes of JSON of sends, return values, exports and recorded props together (512 × EVENT_MAX_BYTES): run fewer at once`;
    expect(ofA.filter((r) => r.status === 'success')).toHaveLength(5);
    expect(ofA.filter((r) => r.status === 'error').map((r) => ({ failed: r.failed_step, error: r.steps[0].error }))).toEqual([{ failed: 'send', error: { name: 'HeldSizeLimitError', message } }]);
    expect((await runsOf(b, theirs, 3)).map((r) => r.status)).toEqual(['success', 'success', 'success']);
    // Given back once their sends are published (a moment after the runs are recorded, longer on a loaded machine):
    // A's next run holds as much again. Until then a run is refused as the sixth was, never otherwise.
    let next: Run | undefined;
    for (let n = 7; n < 37 && next?.status !== 'success'; n++) {
      if (next) await new Promise((r) => setTimeout(r, 1000));
      await run(a, mine);
      next = (await runsOf(a, mine, n))[0];
      if (next.status !== 'success') expect(next.steps[0].error).toEqual({ name: 'HeldSizeLimitError', message });
    }
    expect(next?.status).toBe('success');
  });

  it('counts the props its templates filled in, which each run keeps for its record, as it counts sends', async () => {
    // 49 steps whose props are each about 60 KB of the event (a step's record keeps at most one event of them), then a
    // wait: about 2.9 MiB a run, so 12 runs do not fit in 32 MiB.
    const fill = { code: 'export default defineComponent({ props: { t: { type: "string" } }, async run() {} });', props: { t: 'x{{trigger.event.s}}' } };
    const wait = { name: 'wait', code: step('await new Promise((r) => setTimeout(r, 20000));') };
    const res = await client(system, a.apiKey).post('/workflows', { name: 'a-fills', trigger: { manual: {} }, steps: [...Array.from({ length: 49 }, (_, i) => ({ ...fill, name: `fill${i}` })), wait] });
    expect(res.status).toBe(200);
    const id = res.body.data.id as string;
    const event = { s: 'f'.repeat(EVENT_MAX_BYTES - 4096) };
    for (let i = 0; i < 12; i++) expect((await client(system, a.apiKey).post(`/workflows/${id}/run`, { event })).status).toBe(202);
    const runs = await runsOf(a, id, 12);
    // Runs that go step by step side by side pass the bound together: some of them fail, and give back what they held.
    const errors = runs.filter((r) => r.status === 'error').map((r) => r.steps[r.steps.length - 1].error?.name);
    expect(errors.length).toBeGreaterThan(0);
    expect(new Set(errors)).toEqual(new Set(['HeldSizeLimitError']));
    expect(runs.some((r) => r.status === 'success')).toBe(true);
  });
});
