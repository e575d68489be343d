import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

const HTTP_SOURCE = `module.exports = {
  name: "Http", version: "1",
  props: { http: "$.interface.http" },
  async run(event) { this.$emit(event.body); },
};`;
const ECHO = `export default defineComponent({ async run({ steps, $ }) { $.send.emit({ raw_event: steps.trigger.event }); } });`;

/**
 * What still waits for a deleted source or workflow leaves INVOCATIONS with it: the runner of its partition would
 * otherwise acknowledge it as unknown one message at a time, and the partition's other sources would wait behind.
 * No runner here, so nothing but the delete can empty the backlog.
 */
describe('deleting a source or workflow', () => {
  let system: System;
  let api: ReturnType<typeof client>;
  const pending = async (): Promise<number> => ((await (await fetch(`${system.origin}/healthz`)).json()) as { ingest: { invocations_pending: number } }).ingest.invocations_pending;

  /** Waits for the api's figure to reach `n`; a timeout says the figure last read and what the api logged of purges and backlog reads. */
  const waitPending = async (n: number, what: string): Promise<void> => {
    let last = -1;
    try {
      await eventually(async () => (last = await pending()) === n, { what, timeoutMs: 60_000 });
    } catch (e) {
      const logged = system.logs('api').split('\n').filter((l) => /purg|backlog/i.test(l)).slice(-10).join('\n');
      throw new Error(`${(e as Error).message} (invocations_pending last read ${last}; api logged:\n${logged})`);
    }
  };

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0' }, { apps: ['api', 'delivery'] });
    api = client(system, createUser(system).apiKey);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('removes the invocations still waiting for it', async () => {
    const keep = (await api.post('/sources', { component_code: HTTP_SOURCE, name: 'kept' })).body.data;
    const gone = (await api.post('/sources', { component_code: HTTP_SOURCE, name: 'deleted' })).body.data;
    const wf = (await api.post('/workflows', { name: 'deleted-wf', trigger: { manual: {} }, steps: [{ name: 'echo', code: ECHO }] })).body.data;
    const post = (url: string, n: number) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
    for (let n = 0; n < 40; n++) expect((await post(gone.configured_props.http.endpoint_url, n)).status).toBe(200);
    for (let n = 0; n < 20; n++) expect((await api.post(`/workflows/${wf.id}/run`, { event: { n } })).status).toBe(202);
    for (let n = 0; n < 5; n++) expect((await post(keep.configured_props.http.endpoint_url, n)).status).toBe(200);
    await eventually(async () => (await pending()) === 65, { what: '65 invocations waiting' });

    expect((await api.del(`/sources/${gone.id}`)).status).toBe(204);
    await waitPending(25, "the deleted source's 40 gone");
    expect((await api.del(`/workflows/${wf.id}`)).status).toBe(204);
    await waitPending(5, "the deleted workflow's 20 gone, the other source's 5 kept");
  });
});
