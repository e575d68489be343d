import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * What a workflow run took of its account's room in the runner (512 × EVENT_MAX_BYTES of sends, outputs and recorded
 * props of its runs in progress) is given back however its handling ends. A step of 135,000 `$.send.sse` calls (an
 * operator may allow that many with EMITS_PER_INVOCATION) once made the runner's handling of the run throw after the
 * step's 8 MB were taken: never given back, the invocation was tried again every second, each try taking 8 MB more,
 * until every later run of the account failed with HeldSizeLimitError.
 */
const EVENT_MAX_BYTES = 64 * 1024;
const SENDS = 135_000;
const step = (body: string) => `export default defineComponent({ async run({ steps, $ }) { ${body} } });`;
type Run = { status: string; steps: { error?: { name: string; message: string } }[] };

describe("a workflow run's held room, given back however its handling ends", () => {
  let system: System;
  let a: TestUser;

  beforeAll(async () => {
    system = await startSystem({ EVENT_MAX_BYTES: String(EVENT_MAX_BYTES), EMITS_PER_INVOCATION: String(SENDS), EMITS_PER_SECOND_PER_ACCOUNT: '0', EMITS_BYTES_PER_SECOND_PER_ACCOUNT: '0' });
    a = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const workflow = async (name: string, steps: { name: string; code: string }[]): Promise<string> => {
    const res = await client(system, a.apiKey).post('/workflows', { name, trigger: { manual: {} }, steps });
    expect(res.status).toBe(200);
    return res.body.data.id as string;
  };
  const run = async (id: string): Promise<void> => {
    expect((await client(system, a.apiKey).post(`/workflows/${id}/run`, {})).status).toBe(202);
  };
  const runsOf = async (id: string, n: number): Promise<Run[]> =>
    eventually(async () => {
      const runs = (await client(system, a.apiKey).get(`/workflows/${id}/runs?limit=100`)).body.data as Run[] | undefined;
      return runs && runs.length >= n ? runs : undefined;
    }, { what: `${n} runs of ${id}`, timeoutMs: 90_000 });

  it('records a run of 135,000 $.send.sse calls, and the account has its whole room afterwards', async () => {
    const flood = await workflow('flood', [{ name: 'flood', code: step(`for (let i = 0; i < ${SENDS}; i++) $.send.sse({ channel: "c", payload: i });`) }]);
    await run(flood);
    expect((await runsOf(flood, 1)).map((r) => r.status)).toEqual(['success']);

    // Five runs at once that each hold about 6 MiB until they end: 30 MiB of the account's 32 MiB, which 8 MB kept
    // by the flood would not leave. What the flood held is given back a moment after its run is recorded (once its
    // sends are published): until then a batch may be refused with HeldSizeLimitError, never otherwise.
    const holder = await workflow('holder', [
      { name: 'send', code: step(`const s = "v".repeat(${EVENT_MAX_BYTES - 4096}); for (let i = 0; i < 100; i++) $.send.sse({ channel: "c", payload: s });`) },
      { name: 'wait', code: step('await new Promise((r) => setTimeout(r, 4000));') },
    ]);
    let batch: Run[] = [];
    for (let n = 5; n <= 50 && !(batch.length && batch.every((r) => r.status === 'success')); n += 5) {
      for (let i = 0; i < 5; i++) await run(holder);
      batch = (await runsOf(holder, n)).slice(0, 5);
      for (const r of batch.filter((x) => x.status !== 'success')) expect(r.steps[0].error?.name).toBe('HeldSizeLimitError');
    }
    expect(batch.map((r) => r.status)).toEqual(['success', 'success', 'success', 'success', 'success']);
  });
});
