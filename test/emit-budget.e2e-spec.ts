import { client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { httpSourceToWebhook, Receiver } from './events.helpers';
import { scrapeMetrics } from './support/metrics';

/** An HTTP source whose run emits `body.n` events, each with `body.bytes` bytes of padding. */
const FLOOD = 'module.exports = { name: "Flood", version: "0.0.1", props: { http: "$.interface.http" }, async run(e) { for (let i = 0; i < e.body.n; i++) this.$emit({ i, pad: "x".repeat(e.body.bytes || 0) }); } };';

const post = (url: string, body: unknown): Promise<Response> => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const heldBack = async (system: System): Promise<number> => (await scrapeMetrics(`http://127.0.0.1:${system.env.RUNNER_METRICS_PORT}/metrics`)).runner_emits_held_back_total ?? 0;

/** A system started with `env` (and per-tenant HTTP rates off) and one webhook receiver for each of two accounts. */
function twoAccounts(env: Record<string, string>): { system: System; ofA: Receiver; ofB: Receiver } {
  const ctx = {} as { system: System; ofA: Receiver; ofB: Receiver };
  beforeAll(async () => {
    ctx.system = await startSystem({ ...env, HTTP_RATE_PER_SEC: '0', RUNNER_METRICS_PORT: String(await freePort()), DELIVERY_METRICS_PORT: String(await freePort()) });
    ctx.ofA = await new Receiver().start();
    ctx.ofB = await new Receiver().start();
  });
  afterAll(async () => {
    await ctx.ofA?.stop();
    await ctx.ofB?.stop();
    await ctx.system?.stop();
  });
  return ctx;
}

/**
 * A's flood source (feeding `ofA`) gets ten requests of `body`, `total` events in all, past A's budget; then B's HTTP
 * source (feeding `ofB`) gets one: A's events are held back, B's arrives while some of A's have not yet, and every
 * one of A's arrives in the end.
 */
async function floodThenProbe({ system, ofA, ofB }: { system: System; ofA: Receiver; ofB: Receiver }, body: { n: number; bytes?: number }, total: number): Promise<void> {
  const apiA = client(system, createUser(system).apiKey);
  const source = (await apiA.post('/sources', { component_code: FLOOD, name: 'flood' })).body.data;
  const wh = (await apiA.post('/webhooks', { url: ofA.url })).body.data.id;
  expect((await apiA.post('/subscriptions', { emitter_id: source.id, listener_id: wh })).status).toBe(200);
  const flood = source.configured_props.http.endpoint_url as string;
  const b = await httpSourceToWebhook(system, client(system, createUser(system).apiKey), ofB.url);
  await eventually(async () => (await post(b.url, { warm: true })).status === 200 && ofB.received.length > 0 && (await post(flood, { n: 0 })).status === 200, { what: 'both sources to run', timeoutMs: 30_000 });

  for (let i = 0; i < 10; i++) expect((await post(flood, body)).status).toBe(200);
  await eventually(async () => (await heldBack(system)) > 0, { what: "A's events held back" });
  expect((await post(b.url, { probe: 'b' })).status).toBe(200);
  await eventually(async () => ofB.received.some((r) => r.body === '{"probe":"b"}'), { what: "B's event" });
  expect(ofA.eventIds().size).toBeLessThan(total);
  await eventually(async () => ofA.eventIds().size === total, { what: "all of A's events", timeoutMs: 60_000 });
}

/**
 * EMITS_PER_SECOND_PER_ACCOUNT (200 here, a burst of ten seconds' worth: 2,000). A's runs emit 4,000 events at once:
 * the first 2,000 are published at once, the others as A's budget refills (200 a second), and none is dropped; B's
 * event, sent after them, does not wait behind A's.
 */
describe("one account's events are published at its own rate (EMITS_PER_SECOND_PER_ACCOUNT)", () => {
  const ctx = twoAccounts({ EMITS_PER_SECOND_PER_ACCOUNT: '200', EMITS_PER_INVOCATION: '400' });

  it("holds back A's events past its budget, delivers B's meanwhile, and loses none of A's", async () => {
    await floodThenProbe(ctx, { n: 400 }, 4000);
  });
});

/**
 * EMITS_BYTES_PER_SECOND_PER_ACCOUNT (400 KiB here, a burst of ten seconds' worth: 4 MiB). A's runs emit 160 events
 * of 50 KiB (8 MiB, far under A's event budget): the first 4 MiB go at once, the rest as A's byte budget refills
 * (about ten seconds); B's small event, sent after them, does not wait behind A's, and none of A's is dropped.
 */
describe("one account's events are published at its own rate of bytes (EMITS_BYTES_PER_SECOND_PER_ACCOUNT)", () => {
  const ctx = twoAccounts({ EMITS_BYTES_PER_SECOND_PER_ACCOUNT: String(400 * 1024) });

  it("holds back A's large events past its byte budget, delivers B's meanwhile, and loses none of A's", async () => {
    await floodThenProbe(ctx, { n: 16, bytes: 50 * 1024 }, 160);
  });
});

/**
 * EMITS_BYTES_PER_SECOND_PER_ACCOUNT's default, 2 MiB (a burst of 20 MiB): the delivery apps index events of every
 * account in the order EMITS stored them, and one replica on 2 cores indexes about 6 MB of large events a second. At
 * the former 8 MiB (an 80 MiB burst) one account's 30 MB of 30 KiB events went out at once and every other account's
 * events waited behind them; now what is past the burst waits in the runner, and B's event goes ahead of it.
 */
describe("one account's large events are held back at the default byte budget", () => {
  const ctx = twoAccounts({});

  it("holds back A's 30 MB past 20 MiB, delivers B's meanwhile, and loses none of A's", async () => {
    await floodThenProbe(ctx, { n: 100, bytes: 30 * 1024 }, 1000);
  });
});
