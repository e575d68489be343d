import { client, createUser, TestUser } from './support/accounts';
import { scrapeMetrics } from './support/metrics';
import { openText } from './support/sse-stream';
import { eventually, freePort, startSystem, System } from './support/system';

/**
 * A workflow's `$.send.sse` messages count in its account's EMITS_PER_SECOND_PER_ACCOUNT and
 * EMITS_BYTES_PER_SECOND_PER_ACCOUNT as its events do. They did not: each run published its 10,000
 * (EMITS_PER_INVOCATION) at once, so one account's runs sent NATS and the api's readers as many messages as it
 * was sent requests, however its events were held back.
 */
const step = (body: string) => `export default defineComponent({ async run({ steps, $ }) { ${body} } });`;
const PER_RUN = 100;
const RUNS = 10;

describe("an account's $.send.sse messages, within its budgets of what it publishes", () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;

  beforeAll(async () => {
    // A budget of 50 messages a second after a burst of 500: A's 1,000 messages take about ten seconds.
    system = await startSystem({ EMITS_PER_SECOND_PER_ACCOUNT: '50', EMITS_PER_INVOCATION: String(PER_RUN), RUNNER_METRICS_PORT: String(await freePort()) });
    a = createUser(system);
    b = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const heldBack = async (): Promise<number> => (await scrapeMetrics(`http://127.0.0.1:${system.env.RUNNER_METRICS_PORT}/metrics`)).runner_emits_held_back_total ?? 0;
  const workflow = async (user: TestUser, name: string, body: string): Promise<string> => {
    const res = await client(system, user.apiKey).post('/workflows', { name, trigger: { manual: {} }, steps: [{ name: 's', code: step(body) }] });
    expect(res.status).toBe(200);
    return res.body.data.id as string;
  };
  const count = (text: string): number => text.split('event: c\n').length - 1;

  it("holds back A's messages past its budget, sends B's meanwhile, and loses none of A's", async () => {
    const flood = await workflow(a, 'flood', `for (let i = 0; i < ${PER_RUN}; i++) $.send.sse({ channel: "c", payload: { i } });`);
    const probe = await workflow(b, 'probe', '$.send.sse({ channel: "c", payload: steps.trigger.event });');
    const ofA = await openText(system, `/sse/p/${flood}/sse`, a.apiKey);
    const ofB = await openText(system, `/sse/p/${probe}/sse`, b.apiKey);
    expect([ofA.status, ofB.status]).toEqual([200, 200]);

    for (let i = 0; i < RUNS; i++) expect((await client(system, a.apiKey).post(`/workflows/${flood}/run`, {})).status).toBe(202);
    await eventually(async () => (await heldBack()) > 0, { what: "A's messages held back", timeoutMs: 30_000 });
    expect((await client(system, b.apiKey).post(`/workflows/${probe}/run`, { event: { probe: 'b' } })).status).toBe(202);
    await eventually(async () => ofB.text().includes('data: {"probe":"b"}'), { what: "B's message", timeoutMs: 30_000 });
    expect(count(ofA.text())).toBeLessThan(PER_RUN * RUNS);
    await eventually(async () => count(ofA.text()) === PER_RUN * RUNS, { what: "all of A's messages", timeoutMs: 90_000 });
    ofA.close();
    ofB.close();
  });
});
