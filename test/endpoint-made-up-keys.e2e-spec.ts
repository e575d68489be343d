import { client, createUser } from './support/accounts';
import { isRetryLater, startSprayers } from './support/sprayers';
import { startSystem, System } from './support/system';

const HTTP_SOURCE = `module.exports = { name: "Http", version: "1", props: { http: "$.interface.http" }, async run(event) { this.$emit(event.body); } };`;
const POOL = 8;
const SPRAYERS = 200;

/**
 * Anyone may send requests to `/e/<any key>`. Made-up keys, each new, were each looked up in Postgres on the api's
 * pool, all of it at once: 200 such callers held the pool and `/v1` waited behind them (`GET /users/me` p50 7 → 195 ms
 * here). Keys not known as endpoints are now looked up on a quarter of the pool (DB_POOL_MAX / 4), the rest waiting.
 * With a pool that gives up on a connection after 250 ms, a pool held by made-up keys shows as 503s to the others.
 */
describe('made-up endpoint keys', () => {
  let system: System;

  beforeAll(async () => {
    // A query that waits 250 ms for a connection is answered 503: a pool held by made-up keys shows as 503s.
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', DB_POOL_MAX: String(POOL), DB_POOL_ACQUIRE_TIMEOUT_MS: '250' }, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("leave the api's Postgres connections to known endpoints and /v1", async () => {
    const api = client(system, createUser(system).apiKey);
    const src = (await api.post('/sources', { component_code: HTTP_SOURCE, name: 'known' })).body.data;
    const known = src.configured_props.http.endpoint_url as string;

    const spray = startSprayers(
      SPRAYERS,
      () => ({ url: `${system.origin}/e/${Math.random().toString(36).slice(2)}z/`, options: { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } } }),
      (r) => (r.status === 404 ? r.body?.code === 'not_found' : isRetryLater(r)),
    );

    const others: number[] = [];
    try {
      const until = Date.now() + 4_000;
      // The known endpoint (its cache entry expires every 3 s) and the api's own routes are answered meanwhile.
      while (Date.now() < until) {
        others.push((await fetch(known, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).status);
        others.push((await api.get('/users/me')).status);
      }
    } finally {
      await spray.stop();
    }
    expect(spray.malformed).toEqual([]);
    expect(spray.statuses.get(404) ?? 0).toBeGreaterThan(SPRAYERS);
    expect(new Set(others)).toEqual(new Set([200]));
  });
});
