import { client, TestUser } from './accounts';
import type { System } from './system';

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
