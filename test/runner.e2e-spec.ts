import { connect, NatsConnection } from 'nats';
import { natsAdmin } from './support/env';
import { decodeJson, EmittedEvent, Names } from '@app/contracts';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/** The component runtime through the real apps: api → INVOCATIONS → runner → EMITS → delivery → event summaries. */
const LIFECYCLE = `module.exports = {
  name: "Lifecycle", version: "1",
  props: { label: { type: "string", optional: true, default: "v1" } },
  hooks: {
    async deploy() { console.log("deploy " + this.label); },
    async activate() { console.log("activate " + this.label); },
    async deactivate() { console.log("deactivate " + this.label); },
  },
  async run(event) { this.$emit({ label: this.label, event }); },
};`;

const DEDUPE = `module.exports = {
  name: "Dedupe", version: "1", dedupe: "unique",
  async run(event) {
    for (const it of event.items) this.$emit({ n: it.id }, { id: it.id, ts: it.ts, summary: "item " + it.id });
  },
};`;

const FAILING = `module.exports = {
  name: "Failing", version: "1",
  props: { db: "$.service.db" },
  async run(event) {
    if (event.loop) { while (true) {} }
    if (event.bigDb) this.db.set("k", "x".repeat(4096));
    if (event.manyEmits) for (let i = 0; i < 10; i++) this.$emit({ i });
    if (event.bomb) { const a = []; for (;;) a.push(new Array(100000).fill({ x: Math.random() })); }
    if (event.bigEvent) this.$emit({ s: "x".repeat(4096) });
    if (event.fail) throw new TypeError("broken: " + event.fail);
    this.$emit({ fine: true });
  },
};`;

const RESPONDER = `module.exports = {
  name: "Responder", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    this.http.respond({ status: "201", headers: { "x-echo": event.query.q || "" }, body: { got: event.body } });
    this.$emit({ after: true });
  },
};`;

const TIMER = `export default {
  name: "Ticker", version: "1",
  props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 1 } } },
  async run(event) { this.$emit(event); },
};`;

describe('runner: the component runtime end to end', () => {
  let system: System;
  let user: TestUser;
  let nc: NatsConnection;

  beforeAll(async () => {
    system = await startSystem({ TIMER_MIN_INTERVAL_SECONDS: '1', MAX_RUN_TIMEOUT_MS: '1500', RUN_TIMEOUT_MS: '1500', DB_MAX_BYTES: '2048', EMITS_PER_INVOCATION: '5', EVENT_MAX_BYTES: '2048', WORKER_HEAP_MB: '64' });
    user = createUser(system);
    nc = await connect(natsAdmin());
  });
  afterAll(async () => {
    await nc?.close();
    await system?.stop();
  });

  const api = () => client(system, user.apiKey);
  type Summary = { id: string; event: Record<string, unknown>; metadata: { name: string } };
  const summaries = async (sourceId: string, eventName?: string): Promise<Summary[]> => {
    const q = `limit=100&expand=event${eventName !== undefined ? `&event_name=${encodeURIComponent(eventName)}` : ''}`;
    const res = await api().get(`/sources/${sourceId}/event_summaries?${q}`);
    return ((res.body?.data ?? []) as Summary[]).slice().reverse(); // oldest first
  };
  const waitFor = <T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000) => eventually(fn, { what, timeoutMs, intervalMs: 200 });
  const logs = async (id: string) => (await summaries(id, '$logs')).map((s) => s.event.msg);
  const create = async (code: string, extra: Record<string, unknown> = {}) => {
    const res = await api().post('/sources', { component_code: code, ...extra });
    expect(res.status).toBe(200);
    return res.body.data as { id: string; component_id: string; configured_props: Record<string, { endpoint_url: string }> };
  };

  it('runs hooks in order: deploy+activate on create, deactivate+activate on update, deactivate on inactive and delete', async () => {
    const s = await create(LIFECYCLE);
    await waitFor('deploy and activate', async () => (await logs(s.id)).length >= 2 && true);
    expect(await logs(s.id)).toEqual(['deploy v1', 'activate v1']);

    expect((await api().put(`/sources/${s.id}`, { component_id: s.component_id, configured_props: { label: 'v2' } })).status).toBe(200);
    await waitFor('update hooks', async () => (await logs(s.id)).length >= 4 && true);
    expect(await logs(s.id)).toEqual(['deploy v1', 'activate v1', 'deactivate v1', 'activate v2']);

    expect((await api().post(`/sources/${s.id}/run`, { event: { n: 1 } })).status).toBe(202);
    await waitFor('the run', async () => (await summaries(s.id, '')).length === 1);
    expect((await summaries(s.id, ''))[0].event).toEqual({ label: 'v2', event: { n: 1 } });

    expect((await api().put(`/sources/${s.id}`, { component_id: s.component_id, configured_props: { label: 'v2' }, active: false })).status).toBe(200);
    await waitFor('deactivate', async () => (await logs(s.id)).length >= 5 && true);
    expect((await logs(s.id))[4]).toBe('deactivate v2');

    expect((await api().put(`/sources/${s.id}`, { component_id: s.component_id, configured_props: { label: 'v3' }, active: true })).status).toBe(200);
    await waitFor('re-activate', async () => (await logs(s.id)).length >= 6 && true);
    expect((await logs(s.id))[5]).toBe('activate v3');

    // Delete: deactivate runs, then the state goes. Event summaries of a deleted source are gone, so read EMITS.
    const names = new Names(system.natsPrefix);
    expect([200, 204]).toContain((await api().del(`/sources/${s.id}`)).status);
    const last = await waitFor('deactivate on delete', async () => {
      const jsm = await nc.jetstreamManager();
      const m = await jsm.streams.getMessage(names.emitsStream, { last_by_subj: names.emit(s.id) }).catch(() => undefined);
      const e = m ? decodeJson<EmittedEvent>(m.data) : undefined;
      return e && (e.event as { msg: string }).msg === 'deactivate v3' ? e : undefined;
    });
    expect(last.name).toBe('$logs');
    const kv = await nc.jetstream().views.kv(names.sourceStateBucket);
    await waitFor('state removed', async () => {
      const e = await kv.get(s.id);
      return !e || e.operation !== 'PUT';
    });
  });

  it('dedupes, orders by ts and gives increasing ids; an emit without id under dedupe is an $errors event', async () => {
    const s = await create(DEDUPE);
    const run = (items: unknown[]) => api().post(`/sources/${s.id}/run`, { event: { items } });
    expect((await run([{ id: 'b', ts: 1_700_000_002_000 }, { id: 'a', ts: '1700000001' }, { id: 'c', ts: '2023-11-14T22:13:23Z' }])).status).toBe(202);
    await waitFor('first batch', async () => (await summaries(s.id, '')).length === 3);
    expect((await run([{ id: 'a' }, { id: 'd' }, { ts: 5 }])).status).toBe(202);
    await waitFor('second batch', async () => (await summaries(s.id, '')).length === 4 && (await summaries(s.id, '$errors')).length === 1);
    const events = await summaries(s.id, '');
    expect(events.map((e) => e.event.n)).toEqual(['a', 'b', 'c', 'd']);
    const ids = events.map((e) => e.id.split('-').map(Number));
    for (let i = 1; i < ids.length; i++) expect(ids[i][0] > ids[i - 1][0] || (ids[i][0] === ids[i - 1][0] && ids[i][1] > ids[i - 1][1])).toBe(true);
    const [err] = await summaries(s.id, '$errors');
    expect(err.event).toMatchObject({ error: { name: 'DedupeError', message: expect.stringContaining('needs an id') } });
  });

  it('a thrown error and each limit breach (timeout, db size, emits per run, heap, event size) become $errors events, and the source keeps working', async () => {
    const s = await create(FAILING);
    await api().post(`/sources/${s.id}/run`, { event: { fail: 'yes' } });
    await api().post(`/sources/${s.id}/run`, { event: { loop: true } });
    await api().post(`/sources/${s.id}/run`, { event: { bigDb: true } });
    await api().post(`/sources/${s.id}/run`, { event: { manyEmits: true } });
    await api().post(`/sources/${s.id}/run`, { event: { bomb: true } });
    await api().post(`/sources/${s.id}/run`, { event: { bigEvent: true } });
    await api().post(`/sources/${s.id}/run`, { event: { ok: 1 } });
    await waitFor('errors and the good run', async () => (await summaries(s.id, '$errors')).length === 6 && (await summaries(s.id, '')).some((e) => e.event.fine), 45_000);
    const errors = await summaries(s.id, '$errors');
    expect(errors[0].event).toMatchObject({ error: { name: 'TypeError', message: 'broken: yes', stack: expect.any(String) }, original_event: { fail: 'yes' }, ts: expect.any(Number) });
    expect(errors[1].event).toMatchObject({ error: { name: 'TimeoutError', message: expect.stringContaining('timed out') }, original_event: { loop: true } });
    expect(errors[2].event).toMatchObject({ error: { message: expect.stringMatching(/db|bytes|limit/i) }, original_event: { bigDb: true } });
    expect(errors[3].event).toMatchObject({ error: { message: expect.stringMatching(/emit/i) }, original_event: { manyEmits: true } });
    expect(errors[4].event).toMatchObject({ error: { name: 'MemoryLimitError', message: expect.stringContaining('64 MB') }, original_event: { bomb: true } });
    expect(errors[5].event).toMatchObject({ error: { name: 'EventSizeLimitError', message: expect.stringContaining('2048 bytes') }, original_event: { bigEvent: true } });
    const last = (await summaries(s.id, '')).pop();
    expect(last?.event).toEqual({ fine: true });
  });

  it('round-trips a custom response to the waiting HTTP client; run goes on after respond()', async () => {
    const s = await create(RESPONDER);
    const url = s.configured_props.http.endpoint_url;
    const res = await waitFor('a custom response', async () => {
      const r = await fetch(`${url}?q=hi`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
      return r.status === 201 ? r : undefined;
    });
    expect(res.headers.get('x-echo')).toBe('hi');
    expect(await res.json()).toEqual({ got: { a: 1 } });
    await waitFor('the emit after respond', async () => (await summaries(s.id, '')).length >= 1);

    // Any status 100–599 is accepted by respond(); a 1xx cannot end an HTTP exchange, so the client gets a clear 502.
    const echo = await create(`module.exports = { name: "Status", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
      async run(event) { this.http.respond({ status: Number(event.query.s), body: "b" }); } };`);
    const echoUrl = echo.configured_props.http.endpoint_url;
    await waitFor('the status source', async () => (await fetch(`${echoUrl}?s=599`)).status === 599);
    const informational = await fetch(`${echoUrl}?s=100`);
    expect(informational.status).toBe(502);
    expect(await informational.json()).toEqual({ error: expect.stringContaining('status 100'), code: 'bad_gateway' });
    expect((await fetch(`${echoUrl}?s=204`)).status).toBe(204);

    // A response larger than one NATS message is a clear 502, not a 504 once HTTP_RESPONSE_TIMEOUT_MS has passed.
    const big = await create(`module.exports = { name: "Big Response", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
      async run(event) { this.http.respond({ status: 200, body: "x".repeat(Number(event.query.n)) }); } };`);
    const bigUrl = big.configured_props.http.endpoint_url;
    await waitFor('the big-response source', async () => (await fetch(`${bigUrl}?n=10`)).status === 200);
    const tooLarge = await fetch(`${bigUrl}?n=2000000`);
    expect(tooLarge.status).toBe(502);
    expect(await tooLarge.json()).toEqual({ error: expect.stringMatching(/^the source's response is \d+ bytes, over the \d+ bytes one NATS message carries/), code: 'response_too_large' });
  });

  it('takes an HTTP body up to the size limit (stored packed when raw + parsed would pass NATS\'s payload limit); a $errors event keeps a large triggering event truncated', async () => {
    const s = await create(`module.exports = { name: "Big Body", version: "1", props: { http: "$.interface.http" },
      async run(event) { if (event.query.fail) throw new Error("big and failing"); this.$emit({ raw: event.bodyRaw.length, items: event.body.items.length, type: event.headers["content-type"] }); } };`);
    const url = s.configured_props.http.endpoint_url;
    // ~500 KB of JSON full of quotes: as bodyRaw (escaped) plus body it is over 1 MB
    const body = JSON.stringify({ items: Array.from({ length: 18_500 }, (_, i) => ({ k: `v"${i}`, q: 'x"y' })) });
    expect(Buffer.byteLength(body)).toBeLessThan(512 * 1024);
    const post = (q = '') => fetch(`${url}${q}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect((await waitFor('the endpoint', async () => {
      const r = await post();
      return r.status === 404 ? undefined : r;
    })).status).toBe(200);
    await waitFor('the emit', async () => (await summaries(s.id, '')).length === 1);
    expect((await summaries(s.id, ''))[0].event).toEqual({ raw: Buffer.byteLength(body), items: 18_500, type: 'application/json' });

    expect((await post('?fail=1')).status).toBe(200);
    const [err] = await waitFor('the $errors event', async () => {
      const e = await summaries(s.id, '$errors');
      return e.length ? e : undefined;
    });
    expect(err.event).toMatchObject({ error: { message: 'big and failing' }, original_event: { $truncated: true, size_bytes: expect.any(Number), preview: expect.stringContaining('"method":"POST"') } });
  });

  it('fires a timer source (ESM) on its interval with { timestamp, interval_seconds }', async () => {
    const s = await create(TIMER, { configured_props: { timer: { intervalSeconds: 1 } } });
    await waitFor('three timer runs', async () => (await summaries(s.id, '')).length >= 3, 30_000);
    const events = (await summaries(s.id, '')).map((e) => e.event as { timestamp: number; interval_seconds: number });
    expect(events[0]).toEqual({ timestamp: expect.any(Number), interval_seconds: 1 });
    const stamps = events.map((e) => e.timestamp);
    expect(new Set(stamps).size).toBe(stamps.length);
  });
});
