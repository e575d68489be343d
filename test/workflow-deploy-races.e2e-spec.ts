import { client, createUser } from './support/accounts';
import { startSystem, System } from './support/system';

const HTTP_SOURCE = 'module.exports = { name: "Hook", version: "1", props: { http: "$.interface.http" }, async run(event) { this.$emit(event.body); } };';
const STEP = 'export default defineComponent({ async run({ steps }) { return steps.trigger.event; } });';
const PAIRS = 8;

/**
 * Two deploys of one workflow at once, one moving its trigger to HTTP and one to an inline source. Before, each
 * read the stored trigger, deployed (or updated) its source, then stored its definition blind: the HTTP deploy
 * stored first deleted the inline source the other had just updated, and the other then stored a trigger naming
 * that deleted source — a workflow no event could ever reach. Now a deploy that finds another stored meanwhile
 * starts again from it: whichever is stored last, its trigger's source exists and no trigger source is left over.
 */
describe('concurrent deploys of one workflow that change its trigger type', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('leave the workflow on a trigger whose source exists, and no source behind', async () => {
    const api = client(system, createUser(system).apiKey);
    const def = (trigger: unknown) => ({ name: 'racing', trigger, steps: [{ name: 'echo', code: STEP }] });
    const inline = def({ source: { code: HTTP_SOURCE, props: {} } });
    const http = def({ http: {} });
    const created = await api.post('/workflows', inline);
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    // How long a deploy of the inline source takes alone: the HTTP deploy is sent at points all along it.
    const t0 = Date.now();
    expect((await api.put(`/workflows/${id}`, inline)).status).toBe(200);
    const inlineMs = Date.now() - t0;
    for (let i = 0; i <= PAIRS; i++) {
      const slow = api.put(`/workflows/${id}`, inline);
      await new Promise((r) => setTimeout(r, (inlineMs * i) / PAIRS));
      const answers = await Promise.all([slow, api.put(`/workflows/${id}`, http)]);
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      const trigger = (await api.get(`/workflows/${id}`)).body.data.trigger as { source?: string; http?: unknown };
      const sources = ((await api.get('/users/me/sources')).body.data as { id: string }[]).map((s) => s.id);
      if (trigger.source) {
        expect((await api.get(`/sources/${trigger.source}`)).status).toBe(200);
        expect(sources).toEqual([trigger.source]);
      } else {
        expect(trigger.http).toBeDefined();
        expect(sources).toEqual([]);
      }
      // Back on an inline source for the next pair.
      expect((await api.put(`/workflows/${id}`, inline)).status).toBe(200);
    }
  });
});
