import { client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { subscriptionsLoaded } from './events.helpers';

/**
 * One event, several listeners: every listener source or workflow subscribed to the emitter runs on it, and
 * what each of them emits is stored and counted. Their runs are distinct invocations, so nothing one listener
 * emits may pass for another's (EMITS and USAGE deduplicate by ids derived from the invocation).
 */
const EMITTER = `module.exports = {
  name: "Fan-out emitter", version: "1",
  props: { http: "$.interface.http" },
  async run(event) { this.$emit({ n: event.body.n }); },
};`;

const listener = (name: string): string => `module.exports = {
  name: "Listener ${name}", version: "1",
  async run(event) { this.$emit({ from: "${name}", got: event }); },
};`;

const WORKFLOW = `export default defineComponent({
  async run({ steps, $ }) { $.send.emit({ raw_event: { from: "W", got: steps.trigger.event } }); },
});`;

type Summary = { event: Record<string, unknown> };
type Api = ReturnType<typeof client>;

const send = (url: string, n: number): Promise<Response> => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });

/** Polls `read` until `done` holds (or the deadline passes) and returns what it read last, so a miss shows as a diff. */
const readUntil = async <T>(read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 60_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  let v = await read();
  while (!done(v) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 500));
    v = await read();
  }
  return v;
};

describe('subscription fan-out: one event to several listeners', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', DELIVERY_METRICS_PORT: String(await freePort()) });
  });
  afterAll(async () => {
    await system?.stop();
  });

  const setup = (): { api: Api; events: (id: string) => Promise<Summary[]>; runEvents: (id: string) => Promise<Summary[]>; used: () => Promise<number> } => {
    const api = client(system, createUser(system).apiKey);
    return {
      api,
      events: async (id) => (await api.get(`/sources/${id}/event_summaries?expand=event&limit=100`)).body.data ?? [],
      runEvents: async (id) => (await api.get(`/workflows/${id}/event_summaries?expand=event&limit=100`)).body.data ?? [],
      used: async () => (await api.get('/users/me')).body.data.daily_invocations_used,
    };
  };

  it('two sources subscribed to one emitter each run on its event, and each one\'s emit is stored and counted', async () => {
    const { api, events, used } = setup();
    const a = (await api.post('/sources', { component_code: EMITTER, name: 'a' })).body.data;
    const b = (await api.post('/sources', { component_code: listener('B'), name: 'b' })).body.data;
    const c = (await api.post('/sources', { component_code: listener('C'), name: 'c' })).body.data;
    expect((await api.post('/subscriptions', { emitter_id: a.id, listener_id: b.id })).status).toBe(200);
    expect((await api.post('/subscriptions', { emitter_id: a.id, listener_id: c.id })).status).toBe(200);
    await subscriptionsLoaded(system);
    // The runner may need a moment to own a new source; the endpoint stores the request either way.
    expect((await send(a.configured_props.http.endpoint_url, 1)).status).toBe(200);

    const both = async () => ({ b: (await events(b.id)).map((e) => e.event), c: (await events(c.id)).map((e) => e.event) });
    const got = await readUntil(both, (v) => v.b.length > 0 && v.c.length > 0);
    expect(got).toEqual({ b: [{ from: 'B', got: { n: 1 } }], c: [{ from: 'C', got: { n: 1 } }] });
    expect(await events(a.id)).toEqual([expect.objectContaining({ event: { n: 1 } })]);

    // A's run from outside, then B's and C's: three invocations.
    const usage = await readUntil(used, (n) => n >= 3, 30_000);
    await new Promise((r) => setTimeout(r, 1_500));
    expect([usage, await used()]).toEqual([3, 3]);
  });

  it('a source and a workflow subscribed to one emitter each run on its event', async () => {
    const { api, events, runEvents } = setup();
    const a = (await api.post('/sources', { component_code: EMITTER, name: 'a2' })).body.data;
    const b = (await api.post('/sources', { component_code: listener('B'), name: 'b2' })).body.data;
    const w = (await api.post('/workflows', { name: 'w', trigger: { source: a.id }, steps: [{ name: 'forward', code: WORKFLOW }] })).body.data;
    expect((await api.post('/subscriptions', { emitter_id: a.id, listener_id: b.id })).status).toBe(200);
    await subscriptionsLoaded(system);
    await eventually(async () => (await send(a.configured_props.http.endpoint_url, 2)).ok);

    const both = async () => ({ b: (await events(b.id)).map((e) => e.event), w: (await runEvents(w.id)).map((e) => e.event) });
    const got = await readUntil(both, (v) => v.b.length > 0 && v.w.length > 0);
    expect(got).toEqual({ b: [{ from: 'B', got: { n: 2 } }], w: [expect.objectContaining({ raw_event: { from: 'W', got: { n: 2 } } })] });
  });
});
