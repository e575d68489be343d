import { client, createUser, TestUser } from './accounts';
import { eventually, startSystem, System } from './system';

/** An HTTP source that emits the `n` of each request's body. */
export const COUNTER = 'module.exports = { name: "Counter", version: "0.0.1", props: { http: "$.interface.http" }, async run(event) { this.$emit({ n: event.body.n }); } };';

/** Deploys a source of a user's (with its endpoint, when it has an HTTP interface), and reads the `n` of its events, oldest first. */
export function sourcesOf(system: () => System) {
  return {
    deploy: async (u: TestUser, code: string, name: string): Promise<{ id: string; url: string }> => {
      const res = await client(system(), u.apiKey).post('/sources', { component_code: code, name });
      expect([name, res.status]).toEqual([name, 200]);
      return { id: res.body.data.id, url: res.body.data.configured_props.http?.endpoint_url ?? '' };
    },
    emitted: async (u: TestUser, id: string): Promise<number[]> => {
      const res = await client(system(), u.apiKey).get(`/sources/${id}/event_summaries?limit=100&expand=event`);
      // Newest first.
      return ((res.body?.data ?? []) as { event: { n: number } }[]).map((e) => e.event.n).reverse();
    },
  };
}

/** POSTs `body` as JSON to a source's endpoint; the status. */
export const post = async (url: string, body: unknown): Promise<number> => (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).status;

export interface OnePartition extends ReturnType<typeof sourcesOf> {
  system: System;
  /** The account that fills the partition. */
  a: TestUser;
  /** The account whose sources must still run. */
  b: TestUser;
  /** Deploys B's COUNTER and waits for it to run once (`n` -1) before A does anything. */
  counterOfB(): Promise<{ id: string; url: string }>;
  /** Posts `n` 0 … count - 1 to B's counter and waits for all of them to have run, in order, after its -1 (`what`: behind what). */
  runsOfB(counter: { id: string; url: string }, count: number, what: string): Promise<void>;
}

/**
 * The fixture of a describe block about fairness within a partition: a system with one partition for everything
 * (and `env`, or what it resolves to, on top), started before the block's tests and stopped after, and two accounts of it.
 */
export function onePartition(env: Record<string, string> | (() => Promise<Record<string, string>>)): OnePartition {
  const fixture = { ...sourcesOf(() => fixture.system) } as OnePartition;
  fixture.counterOfB = async () => {
    const counter = await fixture.deploy(fixture.b, COUNTER, 'b-counter');
    expect(await post(counter.url, { n: -1 })).toBe(200);
    await eventually(async () => (await fixture.emitted(fixture.b, counter.id)).includes(-1), { what: "B's source to run" });
    return counter;
  };
  fixture.runsOfB = async (counter, count, what) => {
    for (let n = 0; n < count; n++) expect(await post(counter.url, { n })).toBe(200);
    const expected = [-1, ...Array.from({ length: count }, (_, n) => n)];
    await eventually(async () => (await fixture.emitted(fixture.b, counter.id)).length === expected.length, { what: `B's ${count} invocations to run ${what}`, timeoutMs: 60_000 });
    expect(await fixture.emitted(fixture.b, counter.id)).toEqual(expected);
  };
  beforeAll(async () => {
    fixture.system = await startSystem({ PARTITIONS: '1', ...(typeof env === 'function' ? await env() : env) });
    fixture.a = createUser(fixture.system);
    fixture.b = createUser(fixture.system);
  });
  afterAll(async () => {
    await fixture.system?.stop();
  });
  return fixture;
}
