import { client, createUser } from './support/accounts';
import { startSystem, System } from './support/system';

/**
 * What one account's component and deploy make the api compute on its own thread, which every account's requests
 * share: work that grew with the square of what the account chose held the api for minutes, and every other
 * account's request waited. Here each such save or deploy answers, and another account is answered meanwhile.
 */
describe("the api's thread against one account's components", () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  /** Runs `work` while another account reads its own user every 50 ms; both must finish. */
  const besideAnother = async <T,>(work: Promise<T>): Promise<{ result: T; answered: number }> => {
    const other = client(system, createUser(system).apiKey);
    let done = false;
    let answered = 0;
    const reads = (async () => {
      while (!done) {
        expect((await other.get('/users/me')).status).toBe(200);
        answered++;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const result = await work.finally(() => (done = true));
    await reads;
    return { result, answered };
  };

  it("checks a deploy's 6,000 values against the component's 400,000 options once each (each value was compared with every option)", async () => {
    const api = client(system, createUser(system).apiKey);
    const code = `module.exports = { name: "many options", version: "1",
      props: { pick: { type: "string[]", label: "Pick", options: Array.from({ length: 400000 }, (_, i) => "o" + i) } }, async run() {} };`;
    const saved = await api.post('/components', { component_code: code });
    expect(saved.status).toBe(200);
    // The last 6,000 options, as many as one prop's value may hold (PROPS_MAX_BYTES, 64 KiB).
    const values = Array.from({ length: 6_000 }, (_, i) => `o${399_999 - i}`);
    const { result } = await besideAnother(api.post('/sources', { component_id: saved.body.data.id, configured_props: { pick: values } }));
    expect([result.status, result.body.error]).toEqual([200, undefined]);
    expect(result.body.data.configured_props.pick).toHaveLength(6_000);
    // A value that is not an option is named.
    const wrong = await api.post('/sources', { component_id: saved.body.data.id, configured_props: { pick: ['o1', 'nope'] } });
    expect([wrong.status, wrong.body.error]).toEqual([400, expect.stringMatching(/^configured_props\.pick\[1\]: "nope" is not one of the options/)]);
  }, 90_000);

  it('reads a component of 120,000 props that each name an app by propDefinition in one pass (each prop scanned every prop)', async () => {
    const api = client(system, createUser(system).apiKey);
    // Under 200 bytes of code: 120,000 props whose propDefinition names an app that is not a prop of the component.
    const code = 'const props = {}; for (let i = 0; i < 120000; i++) props["p" + i] = { type: "string", propDefinition: ["a", "x"] }; module.exports = { name: "n", version: "1", props, async run() {} };';
    const { result, answered } = await besideAnother(api.post('/components', { component_code: code }));
    expect([result.status, result.body.data?.configurable_props?.length]).toEqual([200, 120_000]);
    expect(answered).toBeGreaterThan(0);
  }, 90_000);
});
