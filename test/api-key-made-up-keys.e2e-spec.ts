import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { admin, client, createUser } from './support/accounts';
import { isRetryLater, startSprayers } from './support/sprayers';
import { startSystem, System } from './support/system';

const POOL = 8;
const SPRAYERS = 300;

/** A key shaped like the ones the api issues (`pd_` and 32 random bytes), existing nowhere. */
const madeUpKey = (): string => 'pd_' + randomBytes(32).toString('base64url');

/**
 * Anyone may send `Authorization: Bearer <any key>` to `/v1`. Made-up keys, each new, were each looked up in Postgres on
 * the api's pool, all of them at once: 300 such callers held the pool, and a real key's `GET /v1/users/me` waited
 * behind them (p50 0.7 s here) until the pool gave up on it (503). Keys the replica has not seen authenticate are now
 * looked up on a quarter of the pool (DB_POOL_MAX / 4), 256 more waiting and past that 503 with Retry-After; a key
 * found to be none is answered 401 without a look-up for a while. A key that authenticated is still looked up on every
 * request, so a rotation applies to the next one, and a new key is looked up like any key not seen yet.
 */
describe('made-up API keys', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({ DB_POOL_MAX: String(POOL), DB_POOL_ACQUIRE_TIMEOUT_MS: '250' }, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("leave the api's Postgres connections to real keys, and keys revoked or issued meanwhile apply at once", async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    expect((await api.get('/users/me')).status).toBe(200);

    const spray = startSprayers(
      SPRAYERS,
      () => ({ url: `${system.baseUrl}/users/me`, options: { headers: { authorization: `Bearer ${madeUpKey()}` } } }),
      (r) => (r.status === 401 ? r.body?.code === 'unauthorized' && r.body.error === 'invalid API key' : isRetryLater(r)),
    );

    const others: number[] = [];
    let rotated: { old: number[]; fresh: string[] } | undefined;
    try {
      const until = Date.now() + 4_000;
      while (Date.now() < until) {
        others.push((await api.get('/users/me')).status);
        if (!rotated && Date.now() > until - 2_000) {
          const fresh = client(system, admin(system, ['keys', 'rotate', '--user', user.id]).api_key);
          rotated = { old: [], fresh: [] };
          // The new key is not known to the api yet: while made-up keys fill the lane it is asked to retry.
          while (rotated.fresh.at(-1) !== '200' && rotated.fresh.length < 20) {
            rotated.old.push((await api.get('/users/me')).status);
            const r = await fresh.get('/users/me');
            rotated.fresh.push(r.status === 503 ? `503 retry-after ${r.headers.get('retry-after')}` : String(r.status));
            if (r.status === 503) await new Promise((resolve) => setTimeout(resolve, 100));
          }
          break;
        }
      }
    } finally {
      await spray.stop();
    }
    expect(spray.malformed).toEqual([]);
    expect(spray.statuses.get(401) ?? 0).toBeGreaterThan(SPRAYERS);
    expect(new Set(others)).toEqual(new Set([200]));
    expect(new Set(rotated?.old)).toEqual(new Set([401]));
    expect(rotated?.fresh.at(-1)).toBe('200');
    expect(rotated?.fresh.filter((s) => s !== '200' && s !== '503 retry-after 1')).toEqual([]);
  });

  it('answer a key found to be none 401 again without looking it up, and a revoked key 401 at once', async () => {
    const key = madeUpKey();
    expect((await client(system, key).get('/users/me')).status).toBe(401);
    // With the keys table locked, a look-up waits: the key found to be none is answered all the same.
    const pg = new Client({ connectionString: system.databaseUrl });
    await pg.connect();
    try {
      await pg.query('begin');
      await pg.query('lock table api_keys in access exclusive mode');
      const answer = client(system, key).get('/users/me').then((r) => r.status);
      const waited = new Promise((resolve) => setTimeout(() => resolve('waited for the lock'), 2_000));
      expect(await Promise.race([answer, waited])).toBe(401);
    } finally {
      await pg.query('commit');
      await pg.end();
    }

    const user = createUser(system);
    expect((await client(system, user.apiKey).get('/users/me')).status).toBe(200);
    admin(system, ['keys', 'revoke', '--user', user.id]);
    expect((await client(system, user.apiKey).get('/users/me')).status).toBe(401);
    const fresh = admin(system, ['keys', 'rotate', '--user', user.id]).api_key;
    expect((await client(system, fresh).get('/users/me')).status).toBe(200);
  });
});
