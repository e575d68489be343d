import { systemWithUser } from './support/system-with-user';
import { eventually } from './support/system';

/**
 * Dedupe ids are strings or numbers (the spec's `$emit` table). An id of another JSON type (an object, an array, a
 * boolean) is no id: under `greatest` it made the runner throw on every run of the source, and under `unique` every
 * object id was the same text, `[object Object]`, so a source emitting `{ id: { guid } }` emitted its first event only.
 */
const deduper = (strategy: string) => `module.exports = {
  name: "Id Types ${strategy}", version: "1", dedupe: "${strategy}",
  async run(event) {
    for (const it of event.items) this.$emit({ n: it.n }, { id: it.id });
  },
};`;

describe('dedupe ids that are neither strings nor numbers', () => {
  const ctx = systemWithUser();

  type Summary = { event: { n?: number; error?: { name: string; message: string } } };
  const summaries = async (id: string, eventName: string): Promise<Summary[]> =>
    ((await ctx.api.get(`/sources/${id}/event_summaries?limit=100&expand=event&event_name=${encodeURIComponent(eventName)}`)).body?.data ?? []).slice().reverse();
  const run = async (id: string, items: unknown[]) => expect((await ctx.api.post(`/sources/${id}/run`, { event: { items } })).status).toBe(202);

  it.each(['unique', 'greatest', 'last'])('under "%s", an object, array or boolean id is a DedupeError; string and number ids go on', async (strategy) => {
    const created = await ctx.api.post('/sources', { component_code: deduper(strategy) });
    expect(created.status).toBe(200);
    const id = created.body.data.id;
    await run(id, [{ n: 1, id: { guid: 'a' } }, { n: 2, id: { guid: 'b' } }, { n: 3, id: [7] }, { n: 4, id: true }, { n: 5, id: 10 }]);
    await run(id, [{ n: 6, id: '11' }]);
    let seen: unknown;
    const [emitted, errors] = await eventually(async () => {
      const both = [await summaries(id, ''), await summaries(id, '$errors')] as const;
      seen = both.map((list) => list.map((e) => e.event.n ?? e.event.error?.message));
      return both[0].some((e) => e.event.n === 6) ? both : undefined;
    }, { what: 'the second run', timeoutMs: 60_000 }).catch((e: Error) => {
      throw new Error(`${e.message}; events and errors seen: ${JSON.stringify(seen)}`);
    });
    expect(emitted.map((e) => e.event.n)).toEqual([5, 6]);
    expect(errors.map((e) => [e.event.error?.name, e.event.error?.message])).toEqual(
      ['an object', 'an object', 'an array', 'a boolean'].map((kind) => ['DedupeError', `event not emitted: the "${strategy}" dedupe strategy needs a string or number id, got ${kind}`]),
    );
    expect(ctx.system.logs('runner')).not.toMatch(/is not a function|actor job failed/);
  });
});
