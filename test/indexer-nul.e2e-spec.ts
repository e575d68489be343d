import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/** U+0000 emitted by component code (Postgres text cannot hold it) must not stop the indexing of anyone's events. */
describe('indexing events that contain U+0000', () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0' });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('stores U+FFFD in the summary and goes on indexing', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const code = `module.exports = { name: "Nul", version: "1", props: { http: "$.interface.http" },
      async run(event) { this.$emit({ text: event.body.text, ["k\\u0000"]: 1 }, { summary: "s\\u0000" }); this.$emit({ text: "next" }, { name: "ch\\u0000an" }); } };`;
    const created = await api.post('/sources', { component_code: code });
    expect(created.status).toBe(200);
    const url = created.body.data.configured_props.http.endpoint_url as string;
    await eventually(async () => (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'x\u0000y' }) })).status === 200, { what: 'the endpoint', timeoutMs: 30_000 });
    const events = await eventually(async () => {
      const data = (await api.get(`/sources/${created.body.data.id}/event_summaries?expand=event,summary`)).body.data as { event: Record<string, unknown>; summary?: string }[];
      return data.find((e) => e.summary !== undefined && e.event.text !== 'next');
    }, { what: 'the indexed event', timeoutMs: 30_000 });
    expect(events.event).toEqual({ text: 'x\ufffdy', 'k\ufffd': 1 });
    expect(events.summary).toBe('s\ufffd');
    // The second emit went to a channel whose name held U+0000: indexed too (one batch failing would lose both).
    const other = await eventually(async () => (await api.get(`/sources/${created.body.data.id}/event_summaries?expand=event&event_name=${encodeURIComponent('ch\ufffdan')}`)).body.data?.[0], { what: 'the channel event', timeoutMs: 30_000 });
    expect(other.event).toEqual({ text: 'next' });
  });
});
