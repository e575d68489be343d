import { client, createUser } from './support/accounts';
import { Receiver, subscriptionsLoaded } from './events.helpers';
import { eventually, freePort, startSystem, System } from './support/system';

/**
 * U+0000 and lone UTF-16 surrogates from component code, or U+0000 from a webhook receiver (Postgres text and
 * jsonb cannot hold them), must not stop the indexing or delivery of anyone's events.
 */
describe('events and answers that contain U+0000', () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', WEBHOOK_RETRY_SCHEDULE: '1s,1s', DELIVERY_METRICS_PORT: String(await freePort()) });
  });
  let receiver: Receiver | undefined;
  afterAll(async () => {
    await receiver?.stop();
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
    // The second emit named a channel holding U+0000, which no subscription or read could name: refused, the run failed
    // with the reason as its error (before 2026-12-02 it was indexed under the name with U+FFFD, out of every reach).
    const error = await eventually(async () => (await api.get(`/sources/${created.body.data.id}/event_summaries?event_name=%24errors&expand=event`)).body.data?.[0]?.event, { what: 'the error', timeoutMs: 30_000 });
    expect(error.error).toMatchObject({ name: 'TypeError', message: '$emit(event, meta): meta.name (the channel) must not hold U+0000 or a lone UTF-16 surrogate (no subscription could name the channel)' });
    const all = (await api.get(`/sources/${created.body.data.id}/event_summaries?expand=event`)).body.data as { event: Record<string, unknown> }[];
    expect(all.map((e) => e.event)).toEqual([{ text: 'x\ufffdy', 'k\ufffd': 1 }]);
  });

  it('stores U+FFFD for a lone UTF-16 surrogate a source or a workflow emits, logs, returns or exports, and goes on indexing everyone\'s events', async () => {
    const api = client(system, createUser(system).apiKey);
    const other = client(system, createUser(system).apiKey);
    // Component code makes lone surrogates (the api refuses them in requests): JSON.stringify escapes each as \ud800.
    const lone = 'String.fromCharCode(0xd800) + "|" + String.fromCharCode(0xdc00)';
    const source = await api.post('/sources', { component_code: `module.exports = { name: "Lone", version: "1", props: { http: "$.interface.http" }, async run() { this.$emit({ text: ${lone} }, { summary: ${lone} }); } };` });
    const step = `export default defineComponent({ async run({ $ }) { const s = ${lone}; console.log(s); $.export(s, s); $.send.emit({ raw_event: { text: s } }); return s; } });`;
    const wf = (await api.post('/workflows', { name: 'lone', trigger: { manual: {} }, steps: [{ name: 's', code: step }] })).body.data;
    const sentinel = (await other.post('/workflows', { name: 'sentinel', trigger: { manual: {} }, steps: [{ name: 's', code: 'export default defineComponent({ async run({ $ }) { $.send.emit({ raw_event: "after" }); } });' }] })).body.data;
    const url = source.body.data.configured_props.http.endpoint_url as string;
    await eventually(async () => (await fetch(url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).status === 200, { what: 'the endpoint', timeoutMs: 30_000 });
    expect((await api.post(`/workflows/${wf.id}/run`, {})).status).toBe(202);
    expect((await other.post(`/workflows/${sentinel.id}/run`, {})).status).toBe(202);
    const replaced = '\ufffd|\ufffd';
    const sourceEvent = await eventually(async () => (await api.get(`/sources/${source.body.data.id}/event_summaries?expand=event,summary`)).body.data?.[0], { what: "the source's event", timeoutMs: 30_000 });
    expect([sourceEvent.event, sourceEvent.summary]).toEqual([{ text: replaced }, replaced]);
    const emitted = await eventually(async () => (await api.get(`/workflows/${wf.id}/event_summaries?expand=event`)).body.data?.[0], { what: "the workflow's emit", timeoutMs: 30_000 });
    expect(emitted.event).toEqual({ raw_event: { text: replaced } });
    const [run] = await eventually(async () => (await api.get(`/workflows/${wf.id}/runs`)).body.data?.length && (await api.get(`/workflows/${wf.id}/runs`)).body.data, { what: 'the run record', timeoutMs: 30_000 });
    expect([run.steps[0].return_value, run.steps[0].exports]).toEqual([replaced, { [replaced]: replaced }]);
    await eventually(async () => (await other.get(`/workflows/${sentinel.id}/event_summaries?expand=event`)).body.data?.[0]?.event.raw_event === 'after', { what: "another account's event", timeoutMs: 30_000 });
  });

  it('retries a webhook delivery of such an event with the event intact, and logs an answer that holds U+0000', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const hookReceiver = await new Receiver().start();
    receiver = hookReceiver;
    hookReceiver.respond = (_r, n) => (n === 1 ? { status: 500, body: 'bad\u0000answer' } : { status: 200, body: 'ok' });
    const code = `module.exports = { name: "Nul2", version: "1", props: { http: "$.interface.http" }, async run(event) { this.$emit({ text: event.body.text }); } };`;
    const created = await api.post('/sources', { component_code: code });
    const hook = await api.post(`/webhooks?url=${encodeURIComponent(hookReceiver.url)}`);
    expect((await api.post('/subscriptions', { emitter_id: created.body.data.id, listener_id: hook.body.data.id })).status).toBe(200);
    await subscriptionsLoaded(system);
    const url = created.body.data.configured_props.http.endpoint_url as string;
    await eventually(async () => (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'p\u0000q' }) })).status === 200, { what: 'the endpoint', timeoutMs: 30_000 });
    await eventually(async () => hookReceiver.received.length >= 2, { what: 'the retried delivery', timeoutMs: 30_000 });
    expect(hookReceiver.received.map((r) => JSON.parse(r.body).text)).toEqual(['p\u0000q', 'p\u0000q']);
    const log = await eventually(async () => {
      const rows = (await api.get(`/webhooks/${hook.body.data.id}/deliveries?limit=10`)).body.data as { status: string; response_body?: string }[];
      return rows.length >= 2 ? rows : undefined;
    }, { what: 'both attempts in the delivery log', timeoutMs: 30_000 });
    expect(JSON.stringify(log)).toContain('bad\ufffdanswer');
  });
});
