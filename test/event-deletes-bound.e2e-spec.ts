import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';
import { Emitter, insertSource, sql } from './events.helpers';

/**
 * `DELETE /sources/{id}/events` answers 202 and deletes in the background. A hostile account sending many of them
 * at once must not make the api run as many scans of EMITS and deletes in Postgres at once: an account's deletions
 * run one at a time per api replica, a few may wait, and past that the request is refused with 429.
 */
describe('DELETE /sources/{id}/events: deletions bounded per account', () => {
  let system: System;
  let emitter: Emitter;
  let flooder: TestUser;
  let other: TestUser;

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api', 'delivery'] });
    emitter = await Emitter.connect(system);
    flooder = createUser(system);
    other = createUser(system);
  });
  afterAll(async () => {
    await emitter?.close();
    await system?.stop();
  });

  const del = (user: TestUser, src: string, query: string): Promise<Response> =>
    fetch(`${system.origin}/v1/sources/${src}/events${query}`, { method: 'DELETE', headers: { authorization: `Bearer ${user.apiKey}` } });

  const indexed = async (src: string): Promise<number> => Number((await sql<{ n: string }>(system, 'select count(*) as n from event_summaries where emitter_id = $1', [src]))[0].n);

  it("refuses an account's deletions past those waiting with 429 rate_limited; equal ones join; other accounts' run at once", async () => {
    const src = await insertSource(system, flooder.id);
    const firstMs = Date.now();
    // Enough events that every range deletion scans for a while.
    for (let i = 0; i < 3000; i += 100) await Promise.all(Array.from({ length: 100 }, (_, j) => emitter.emit(src, flooder.id, { n: i + j })));

    // 120 different ranges at once (each an event id that does not exist: nothing is deleted, every one scans).
    const flood = await Promise.all(Array.from({ length: 120 }, (_, i) => del(flooder, src, `?start_id=${firstMs - 1}-${i}&end_id=${firstMs - 1}-${i}`)));
    const statuses = flood.map((r) => r.status);
    // 202 or 429; on a loaded machine also a 503 with Retry-After for one that got no Postgres connection within DB_POOL_ACQUIRE_TIMEOUT_MS (docs/operations.md).
    const retryLater = (r: Response): boolean => r.status === 503 && Number(r.headers.get('retry-after')) >= 1;
    expect(flood.filter((r) => r.status !== 202 && r.status !== 429 && !retryLater(r)).map((r) => `${r.status} ${r.headers.get('retry-after') ?? ''}`)).toEqual([]);
    const refused = flood.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(Number(refused[0].headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await refused[0].json()).toEqual({ error: expect.stringContaining('deletions'), code: 'rate_limited', details: { retry_after_seconds: expect.any(Number) } });

    // The same deletion asked again and again while it waits is one deletion: never refused.
    const same = await Promise.all(Array.from({ length: 60 }, () => del(flooder, src, `?start_id=${firstMs - 2}-0&end_id=${firstMs - 2}-0`)));
    expect(same.map((r) => r.status).filter((s) => s !== 202 && s !== 429)).toEqual([]);

    // Meanwhile another account's deletion is not queued behind the flood.
    const mine = await insertSource(system, other.id);
    for (let i = 0; i < 3; i++) await emitter.emit(mine, other.id, { n: i });
    await eventually(async () => ((await indexed(mine)) === 3 ? true : undefined), { what: "the other account's events indexed" });
    expect((await del(other, mine, '')).status).toBe(202);
    await eventually(async () => ((await indexed(mine)) === 0 ? true : undefined), { what: "the other account's events deleted", timeoutMs: 5_000 });

    // Once the flood has run, the flooder's own deletions are taken again and done.
    await eventually(async () => ((await indexed(src)) > 0 ? true : undefined), { what: "the flooder's events indexed", timeoutMs: 60_000 });
    const done = await eventually(async () => {
      const r = await del(flooder, src, '');
      return r.status === 202 ? r : undefined;
    }, { what: 'a deletion accepted after the flood', timeoutMs: 120_000 });
    expect(done.status).toBe(202);
    await eventually(async () => ((await indexed(src)) === 0 ? true : undefined), { what: "the flooder's events deleted", timeoutMs: 120_000 });
  });

  it('is client input: a bad range is still a 400, a deleted or foreign source a 404, before any bound', async () => {
    const src = await insertSource(system, flooder.id);
    expect((await del(flooder, src, '?start_id=x')).status).toBe(400);
    expect((await del(other, src, '')).status).toBe(404);
  });
});
