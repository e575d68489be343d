import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/** The answer to a caller of a workflow's HTTP endpoint whose response is over one NATS message names the workflow. */
describe("a workflow's response over one NATS message", () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem();
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('is answered 502 response_too_large, saying "workflow"', async () => {
    const api = client(system, createUser(system).apiKey);
    const res = await api.post('/workflows', { name: 'big-answer', trigger: { http: { customResponse: true } }, steps: [{ name: 'answer', code: 'export default defineComponent({ async run({ $ }) { await $.respond({ status: 200, body: "x".repeat(3 * 1024 * 1024) }); } });' }] });
    expect(res.status).toBe(200);
    const url = res.body.data.trigger.endpoint_url as string;
    const answer = await eventually(async () => {
      const r = await fetch(url, { method: 'POST' });
      return r.status === 502 ? r : undefined;
    }, { what: 'the 502', timeoutMs: 30_000 });
    expect(await answer.json()).toEqual({ error: expect.stringMatching(/^the workflow's response is \d+ bytes, over the \d+ bytes one NATS message carries/), code: 'response_too_large' });
  });
});
