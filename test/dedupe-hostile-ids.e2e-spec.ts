import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * Dedupe ids of any length. The ids a `unique` source has seen (its last 100) are kept in its state, one NATS
 * message: events of 400 KB ids made that write fail (MAX_PAYLOAD_EXCEEDED), and the run came back again and again,
 * its events sent each time, for good — a loop of the runner's time and of NATS's bandwidth that one source could
 * start and a thousand could multiply. Now a long id is kept as its hash.
 */
const DEDUPER = `module.exports = { name: "Deduper", version: "1", dedupe: "unique", props: { http: "$.interface.http" },
  async run(event) {
    const { n, tag, long } = event.body;
    for (let i = 0; i < n; i++) this.$emit({ tag, i }, { id: (long ? "i".repeat(400000) : "") + tag + i });
  } };`;

describe('dedupe ids of hostile length', () => {
  let system: System;
  let a: TestUser;

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0' });
    a = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('keeps 400 KB ids as their hashes: the events go out once, a repeat is deduped, the state is saved', async () => {
    const api = client(system, a.apiKey);
    const res = await api.post('/sources', { component_code: DEDUPER });
    expect(res.status).toBe(200);
    const { id, configured_props } = res.body.data;
    const send = async (body: object) => expect((await fetch(configured_props.http.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).status).toBe(200);
    const tags = async (): Promise<string[]> => ((await api.get(`/sources/${id}/event_summaries?limit=100`)).body.data ?? []).map((e: { event: { tag: string; i: number } }) => `${e.event.tag}${e.event.i}`);

    await send({ n: 10, tag: 'long', long: true });
    await send({ n: 10, tag: 'long', long: true });
    await send({ n: 1, tag: 'after', long: false });
    const seen = await eventually(async () => {
      const t = await tags();
      return t.includes('after0') ? t : undefined;
    }, { what: 'the event sent after the long ids', timeoutMs: 60_000 });
    expect(seen.sort()).toEqual(['after0', ...Array.from({ length: 10 }, (_, i) => `long${i}`)].sort());
    expect(system.logs('runner')).not.toMatch(/MAX_PAYLOAD_EXCEEDED|actor job failed/);
  });
});
