import { client, createUser } from './support/accounts';
import { scrapeMetrics } from './support/metrics';
import { openText } from './support/sse-stream';
import { eventually, startSystem, System } from './support/system';

/**
 * The readers of a workflow's live `$.send.sse` stream share one NATS subscription per api replica: each had its
 * own, so NATS delivered every message, and the api decoded it, once per reader. One account's workflow sending
 * 8 MiB a run to 64 readers of its own (SSE_MAX_STREAMS_PER_KEY) had the api decode half a GiB a run on the thread
 * every account's requests are answered on.
 */
const step = (body: string) => `export default defineComponent({ async run({ steps, $ }) { ${body} } });`;

describe("the readers of a workflow's $.send.sse stream", () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem();
  });
  afterAll(async () => {
    await system?.stop();
  });

  const sseMetrics = async (): Promise<{ readers?: number; subscriptions?: number }> => {
    const m = await scrapeMetrics(`${system.origin}/metrics`);
    return { readers: m.api_workflow_sse_readers, subscriptions: m.api_workflow_sse_subscriptions };
  };

  it('share one subscription per workflow, and each gets every message', async () => {
    const a = createUser(system);
    const api = client(system, a.apiKey);
    const create = async (name: string): Promise<string> => {
      const res = await api.post('/workflows', { name, trigger: { manual: {} }, steps: [{ name: 's', code: step('$.send.sse({ channel: "c", payload: steps.trigger.event }); ') }] });
      expect(res.status).toBe(200);
      return res.body.data.id as string;
    };
    const [busy, quiet] = [await create('busy'), await create('quiet')];
    const readers: Awaited<ReturnType<typeof openText>>[] = [];
    for (let i = 0; i < 20; i++) readers.push(await openText(system, `/sse/p/${busy}/sse`, a.apiKey));
    const other = await openText(system, `/sse/p/${quiet}/sse`, a.apiKey);
    expect([...readers, other].map((r) => r.status)).toEqual(Array(21).fill(200));
    expect(await sseMetrics()).toEqual({ readers: 21, subscriptions: 2 });

    expect((await api.post(`/workflows/${busy}/run`, { event: { n: 7 } })).status).toBe(202);
    await eventually(async () => readers.every((r) => r.text().includes('event: c\ndata: {"n":7}\n\n')), { what: 'the message at every reader', timeoutMs: 30_000 });
    expect(other.text()).not.toContain('data:');

    readers.forEach((r) => r.close());
    await eventually(async () => (await sseMetrics()).subscriptions === 1, { what: 'the subscription of the workflow no one reads any more to go' });
    other.close();
    await eventually(async () => (await sseMetrics()).readers === 0, { what: 'every reader gone' });
    expect(await sseMetrics()).toEqual({ readers: 0, subscriptions: 0 });
  });
});
