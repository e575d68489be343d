import { client, createUser } from './support/accounts';
import { startSystem, System } from './support/system';

/**
 * A workflow with an inline trigger source is stored with its source or not at all: concurrent creates (and deploys
 * that give a workflow its first one) that the name index or the workflows quota refuse once they are past their
 * checks leave no source behind.
 */
const SOURCE = 'module.exports = { name: "Trigger", version: "1", props: { n: { type: "integer" }, http: "$.interface.http" }, async run() {} };';
const STEP = 'export default defineComponent({ async run() { return 1; } });';
const workflow = (name: string, trigger: Record<string, unknown> = { source: { code: SOURCE, props: { n: 1 } } }) => ({ name, trigger, steps: [{ name: 'one', code: STEP }] });

describe("a workflow's inline trigger source", () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({ WORKFLOWS_MAX_PER_ACCOUNT: '2' }, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  const sourcesOf = async (api: ReturnType<typeof client>) => {
    const res = await api.get('/users/me/sources');
    expect(res.status).toBe(200);
    return (res.body.data as { id: string }[]).map((s) => s.id);
  };

  it('is not left behind by creates refused for a name taken meanwhile (409): one workflow, one source', async () => {
    const api = client(system, createUser(system).apiKey);
    const answers = await Promise.all(Array.from({ length: 6 }, () => api.post('/workflows', workflow('same'))));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409, 409]);
    const made = answers.find((r) => r.status === 200)!.body.data.trigger.source as string;
    expect(await sourcesOf(api)).toEqual([made]);
  });

  it('is not left behind by creates refused for the quota reached meanwhile (403): as many sources as workflows', async () => {
    const api = client(system, createUser(system).apiKey);
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => api.post('/workflows', workflow(`w${i}`))));
    const made = answers.filter((r) => r.status === 200).map((r) => r.body.data.trigger.source as string);
    expect({ made: made.length, refused: answers.filter((r) => r.status === 403 && r.body.code === 'quota_exceeded').length }).toEqual({ made: 2, refused: 4 });
    expect((await sourcesOf(api)).sort()).toEqual(made.sort());
  });

  it('is not left behind by deploys refused for a name taken meanwhile (409)', async () => {
    // Two workflows of one account deployed at once under one new name, each with a new trigger source: one is stored.
    const race = async () => {
      const api = client(system, createUser(system).apiKey);
      const ids = await Promise.all(['a', 'b'].map(async (name) => (await api.post('/workflows', workflow(name, { manual: {} }))).body.data.id as string));
      const answers = await Promise.all(ids.map((id) => api.put(`/workflows/${id}`, workflow('c'))));
      expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
      const made = answers.find((r) => r.status === 200)!.body.data.trigger.source as string;
      expect(await sourcesOf(api)).toEqual([made]);
    };
    await Promise.all(Array.from({ length: 3 }, race));
  });
});
