import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

// The foundation's proof: one request travels api → JetStream → runner (Piscina) → EMITS → delivery → Postgres → api.
const COMPONENT = `
module.exports = {
  name: "Thin slice",
  version: "0.0.1",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    this.$emit({ method: event.method, body: event.body, query: event.query }, { summary: "got " + event.method });
  },
};
`;

describe('thin slice: HTTP request → source run → event summary', () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem();
  });
  afterAll(async () => system?.stop());

  it('lists the event emitted for a request to the endpoint URL', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const component = await api.post('/components', { component_code: COMPONENT });
    expect(component.status).toBe(200);
    expect(component.body.data.id).toMatch(/^sc_/);

    const source = await api.post('/sources', { component_id: component.body.data.id, name: 'thin slice' });
    expect(source.status).toBe(200);
    const endpointUrl: string = source.body.data.configured_props.http.endpoint_url;
    expect(endpointUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/e\//);

    // The runner may take a moment to own the new source; the endpoint stores the invocation either way.
    const res = await fetch(`${endpointUrl}?hello=world`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: 1 }) });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ success: true });

    const summaries = await eventually(
      async () => {
        const list = await api.get(`/sources/${source.body.data.id}/event_summaries`);
        return list.body?.data?.length ? list.body : undefined;
      },
      { timeoutMs: 30_000, what: 'the event summary' },
    );
    const [summary] = summaries.data;
    // Exactly the spec's Event summary: the `$emit` summary is there only on request.
    expect(summary).toEqual({
      id: expect.stringMatching(/^\d{13}-\d+$/),
      indexed_at_ms: expect.any(Number),
      event: { method: 'POST', body: { n: 1 }, query: { hello: 'world' } },
      metadata: { emit_id: expect.any(String), name: '', emitter_id: source.body.data.id },
    });
    expect(summaries.page_info).toEqual(expect.objectContaining({ total_count: 1, count: 1 }));
    const expanded = await api.get(`/sources/${source.body.data.id}/event_summaries?expand=summary`);
    expect(expanded.body.data[0]).toEqual({ ...summary, summary: 'got POST' });
    expect((await api.get(`/sources/${source.body.data.id}/event_summaries?expand=sideways`)).status).toBe(400);
  });
});
