import { client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { subscriptionsLoaded } from './events.helpers';

/**
 * Subscriptions that make a loop (A → B → A) end after SUBSCRIPTION_MAX_DEPTH subscriptions in a row:
 * the listener that would run past it records an `$errors` event instead, and that event goes no further.
 */
const MAX_DEPTH = 4;

/** Emits `copies` events one hop further than the event it got (an HTTP request is hop 0, a workflow's emit is under raw_event). */
const hop = (copies: number): string => `module.exports = {
  name: "Hop", version: "1",
  props: { http: "$.interface.http" },
  async run(event) {
    const hop = (event.raw_event?.hop ?? event.hop ?? 0) + 1;
    for (let copy = 0; copy < ${copies}; copy++) this.$emit({ hop, copy });
  },
};`;

const WORKFLOW_HOP = `export default defineComponent({
  async run({ steps, $ }) { $.send.emit({ raw_event: { hop: steps.trigger.event.hop + 1 } }); },
});`;

type Summary = { event: Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
type Api = ReturnType<typeof client>;

const eventsOf = (api: Api) => async (id: string, name = ''): Promise<Summary[]> => (await api.get(`/sources/${id}/event_summaries?expand=event&limit=100&event_name=${encodeURIComponent(name)}`)).body.data ?? [];
const runEventsOf = (api: Api) => async (id: string, channel = ''): Promise<Summary[]> => (await api.get(`/workflows/${id}/${channel ? `${channel}/` : ''}event_summaries?expand=event&limit=100`)).body.data ?? [];
const send = (url: string): Promise<Response> => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
/** Waits until `done` holds and nothing more has come for 3 s (the loop has ended), and returns what was read. */
const settled = async <T>(read: () => Promise<T>, what: string, done: (v: T) => boolean): Promise<T> => {
  let last: T | undefined;
  return eventually(async () => {
    const v = await read();
    const still = last !== undefined && JSON.stringify(v) === JSON.stringify(last);
    last = v;
    return done(v) && still ? v : undefined;
  }, { what, timeoutMs: 90_000, intervalMs: 3_000 });
};

describe('subscription loops', () => {
  let system: System;
  let api: Api;
  const events = (id: string, name?: string) => eventsOf(api)(id, name);
  const runEvents = (id: string, channel?: string) => runEventsOf(api)(id, channel);

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', SUBSCRIPTION_MAX_DEPTH: String(MAX_DEPTH), DELIVERY_METRICS_PORT: String(await freePort()) });
    api = client(system, createUser(system).apiKey);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('ends a loop of two sources: the source that would run past the bound records an $errors event', async () => {
    const a = (await api.post('/sources', { component_code: hop(1), name: 'a' })).body.data;
    const b = (await api.post('/sources', { component_code: hop(1), name: 'b' })).body.data;
    expect((await api.post('/subscriptions', { emitter_id: a.id, listener_id: b.id })).status).toBe(200);
    expect((await api.post('/subscriptions', { emitter_id: b.id, listener_id: a.id })).status).toBe(200);
    await subscriptionsLoaded(system);
    await eventually(async () => (await send(a.configured_props.http.endpoint_url)).ok);

    // A runs from outside (hop 1), then B, A, B, A through 1 to 4 subscriptions; B would be the 5th.
    const errors = await settled(() => events(b.id, '$errors'), "B's refusal", (e) => e.length > 0);
    expect(errors).toHaveLength(1);
    expect(errors[0].event.error).toEqual(expect.objectContaining({ name: 'SubscriptionDepthError', message: expect.stringContaining(`more than SUBSCRIPTION_MAX_DEPTH (${MAX_DEPTH})`) }));
    expect(errors[0].event.original_event).toEqual({ hop: 5, copy: 0 });
    expect((await events(a.id)).map((e) => e.event.hop).sort()).toEqual([1, 3, 5]);
    expect((await events(b.id)).map((e) => e.event.hop).sort()).toEqual([2, 4]);
    // Five runs; the refusal is not counted as one.
    const used = async (): Promise<number> => (await api.get('/users/me')).body.data.daily_invocations_used;
    await eventually(async () => (await used()) === 5, { what: 'usage of 5 invocations', timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await used()).toBe(5);
  });

  it('ends a loop whose runs each emit two events', async () => {
    const a = (await api.post('/sources', { component_code: hop(2), name: 'a2' })).body.data;
    const b = (await api.post('/sources', { component_code: hop(2), name: 'b2' })).body.data;
    expect((await api.post('/subscriptions', { emitter_id: a.id, listener_id: b.id })).status).toBe(200);
    expect((await api.post('/subscriptions', { emitter_id: b.id, listener_id: a.id })).status).toBe(200);
    // B's refusal goes to A's $errors listener too: it is past the bound, so A does not run on it.
    expect((await api.post('/subscriptions', { emitter_id: b.id, listener_id: a.id, event_name: '$errors' })).status).toBe(200);
    await subscriptionsLoaded(system);
    await eventually(async () => (await send(a.configured_props.http.endpoint_url)).ok);

    // Hops 1..5 emit 2, 4, 8, 16, 32 events; the 32 of hop 5 would start the 5th subscription's runs: B records
    // one refusal for the chain, and the 31 others go nowhere (a refusal each would multiply like the runs).
    const count = async () => ({ a: (await events(a.id)).length, b: (await events(b.id)).length, refused: (await events(b.id, '$errors')).length, aErrors: (await events(a.id, '$errors')).length });
    const counts = await settled(count, "B's refusal", (c) => c.refused > 0);
    expect(counts).toEqual({ a: 2 + 8 + 32, b: 4 + 16, refused: 1, aErrors: 0 });
  });

  it('ends a loop of a source and a workflow: the workflow records the refusal as its $errors event', async () => {
    const s = (await api.post('/sources', { component_code: hop(1), name: 's' })).body.data;
    const wf = (await api.post('/workflows', { name: 'w', trigger: { source: s.id }, steps: [{ name: 'hop', code: WORKFLOW_HOP }] })).body.data;
    expect((await api.post('/subscriptions', { emitter_id: wf.id, listener_id: s.id })).status).toBe(200);
    await subscriptionsLoaded(system);
    await eventually(async () => (await send(s.configured_props.http.endpoint_url)).ok);

    // S (hop 1, from outside) → W (2) → S (3) → W (4) → S (5) → W would be the 5th.
    const errors = await settled(() => runEvents(wf.id, '$errors'), "W's refusal", (e) => e.length > 0);
    expect(errors).toHaveLength(1);
    expect(errors[0].event.error.code).toBe('SubscriptionDepthError');
    expect(errors[0].event.original_event).toEqual({ hop: 5, copy: 0 });
    expect((await events(s.id)).map((e) => e.event.hop).sort()).toEqual([1, 3, 5]);
    expect((await runEvents(wf.id)).map((e) => e.event.raw_event.hop).sort()).toEqual([2, 4]);
  });
});

describe('chains of subscriptions that multiply', () => {
  /** Runs one outside event may lead to through subscriptions of subscriptions (SUBSCRIPTION_CHAIN_MAX_RUNS). */
  const MAX_RUNS = 30;
  let system: System;
  let api: Api;
  const events = (id: string, name?: string) => eventsOf(api)(id, name);

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', SUBSCRIPTION_CHAIN_MAX_RUNS: String(MAX_RUNS), DELIVERY_METRICS_PORT: String(await freePort()) });
    api = client(system, createUser(system).apiKey);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const subscribe = async (emitter: string, listener: string) => expect((await api.post('/subscriptions', { emitter_id: emitter, listener_id: listener })).status).toBe(200);
  const chainErrors = async (id: string) => (await events(id, '$errors')).filter((e) => e.event.error.name === 'SubscriptionChainError');

  it('runs SUBSCRIPTION_CHAIN_MAX_RUNS runs through subscriptions of subscriptions, then records one refusal', async () => {
    // S → L1 (its own emit's run: not counted) → 40 events → L2: 30 runs, one refusal, nothing more.
    const [s, l1, l2] = await Promise.all([hop(1), hop(40), hop(1)].map(async (code, i) => (await api.post('/sources', { component_code: code, name: `c${i}` })).body.data));
    await subscribe(s.id, l1.id);
    await subscribe(l1.id, l2.id);
    await subscriptionsLoaded(system);
    await eventually(async () => (await send(s.configured_props.http.endpoint_url)).ok);

    const refusals = await settled(() => chainErrors(l2.id), "L2's refusal", (e) => e.length > 0);
    expect(refusals).toHaveLength(1);
    expect(refusals[0].event.error.message).toContain(`more than SUBSCRIPTION_CHAIN_MAX_RUNS (${MAX_RUNS})`);
    expect(await events(l1.id)).toHaveLength(40);
    expect(await events(l2.id)).toHaveLength(MAX_RUNS);
  });

  it('ends a loop whose runs each emit three events long before SUBSCRIPTION_MAX_DEPTH', async () => {
    const a = (await api.post('/sources', { component_code: hop(3), name: 'a' })).body.data;
    const b = (await api.post('/sources', { component_code: hop(3), name: 'b' })).body.data;
    await subscribe(a.id, b.id);
    await subscribe(b.id, a.id);
    await subscriptionsLoaded(system);
    await eventually(async () => (await send(a.configured_props.http.endpoint_url)).ok);

    // Without the bound the 16th round alone would be 3^16 runs. With it: A's run from outside and B's 3 runs
    // on its emits, at most 30 more, at most one refusal per listener.
    const count = async () => ({ emits: (await events(a.id)).length + (await events(b.id)).length, refusals: (await chainErrors(a.id)).length + (await chainErrors(b.id)).length });
    const counts = await settled(count, 'a refusal', (c) => c.refusals > 0);
    expect(counts.emits).toBeLessThanOrEqual(3 * (1 + 3 + MAX_RUNS));
    expect(counts.refusals).toBeLessThanOrEqual(2);
  });
});
