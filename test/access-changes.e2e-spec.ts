import { admin, client, createUser } from './support/accounts';
import { freePort, startSystem, System } from './support/system';
import { insertSource, streamEnds } from './events.helpers';

/**
 * Access changes made with the admin CLI apply to the very next request, on
 * every api replica (issue 10): nothing about keys, plans or memberships is
 * remembered between requests. Each check first warms both replicas with the
 * old answer, so a cache of it would show.
 */
describe('access changes take effect at once on every api replica', () => {
  let system: System;
  let replicas: System[];

  beforeAll(async () => {
    system = await startSystem({ REGISTRY_DIR: 'off', SSE_KEEPALIVE_MS: '300' }, { apps: ['api'] });
    const port = await freePort();
    await system.startApp('api', 'api-2', { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` });
    replicas = [system, { ...system, baseUrl: `http://127.0.0.1:${port}/v1` }];
  });
  afterAll(async () => system?.stop());

  /** The status of `GET path` with `key` on each replica, asked twice (the second would be served by a cache). */
  const statuses = async (key: string, path: string): Promise<number[]> => {
    const out: number[] = [];
    for (const r of replicas) for (let i = 0; i < 2; i++) out.push((await client(r, key).get(path)).status);
    return out;
  };

  it('a new org member reaches the org on the next request, and a removed one no longer does', async () => {
    const owner = createUser(system);
    const member = createUser(system);
    const org = admin(system, ['orgs', 'create', '--name', 'Access', '--orgname', `access-${owner.id.slice(2, 12).toLowerCase()}`]);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', owner.id]);
    const sourceId = await insertSource(system, org.id, owner.id);
    const path = `/orgs/${org.id}/sources`;

    expect(await statuses(member.apiKey, path)).toEqual([404, 404, 404, 404]);
    expect(admin(system, ['orgs', 'add-member', '--org', org.id, '--user', member.id])).toEqual({ org_id: org.id, user_id: member.id });
    for (const r of replicas) {
      const res = await client(r, member.apiKey).get(path);
      expect(res.status).toBe(200);
      expect(res.body.data.map((s: { id: string }) => s.id)).toEqual([sourceId]);
      expect((await client(r, member.apiKey).get(`/sources/${sourceId}`)).status).toBe(200);
    }

    expect(admin(system, ['orgs', 'remove-member', '--org', org.id, '--user', member.id])).toEqual({ org_id: org.id, user_id: member.id, removed: true });
    expect(await statuses(member.apiKey, path)).toEqual([404, 404, 404, 404]);
    expect(await statuses(member.apiKey, `/sources/${sourceId}`)).toEqual([404, 404, 404, 404]);
    for (const r of replicas) expect((await client(r, member.apiKey).get('/users/me')).body.data.orgs).toEqual([]);
    // The org and its sources stay; the other member is untouched.
    expect(await statuses(owner.apiKey, path)).toEqual([200, 200, 200, 200]);
    // Removing again changes nothing and says so.
    expect(admin(system, ['orgs', 'remove-member', '--org', org.id, '--user', member.id]).removed).toBe(false);
  });

  it('a rotated key stops working on the next request and the new one works', async () => {
    const user = createUser(system);
    expect(await statuses(user.apiKey, '/users/me')).toEqual([200, 200, 200, 200]);
    const rotated = admin(system, ['keys', 'rotate', '--user', user.id]);
    expect(await statuses(user.apiKey, '/users/me')).toEqual([401, 401, 401, 401]);
    expect(await statuses(rotated.api_key, '/users/me')).toEqual([200, 200, 200, 200]);
  });

  it('a revoked user is locked out on the next request until a rotation issues a new key', async () => {
    const user = createUser(system);
    expect(await statuses(user.apiKey, '/users/me')).toEqual([200, 200, 200, 200]);
    expect(admin(system, ['keys', 'revoke', '--user', user.id])).toEqual({ id: user.id, revoked: 1 });
    expect(await statuses(user.apiKey, '/users/me')).toEqual([401, 401, 401, 401]);
    expect(admin(system, ['keys', 'revoke', '--user', user.id]).revoked).toBe(0);
    const rotated = admin(system, ['keys', 'rotate', '--user', user.id]);
    expect(await statuses(rotated.api_key, '/users/me')).toEqual([200, 200, 200, 200]);
    expect(() => admin(system, ['keys', 'revoke', '--user', 'u_nope'])).toThrow(/not found/);
  });

  it('a plan change shows on the next request', async () => {
    const user = createUser(system);
    for (const r of replicas) expect((await client(r, user.apiKey).get('/users/me')).body.data.daily_invocations_quota).toEqual(expect.any(Number));
    admin(system, ['users', 'set-plan', '--user', user.id, '--plan', 'paid']);
    for (const r of replicas) {
      const d = (await client(r, user.apiKey).get('/users/me')).body.data;
      expect(d.billing_period_invocations).toBe(0);
      expect(d.daily_invocations_quota).toBeUndefined();
    }
  });

  it('remove-member refuses an unknown org or user and a missing flag', () => {
    const user = createUser(system);
    expect(() => admin(system, ['orgs', 'remove-member', '--org', 'o_nope', '--user', user.id])).toThrow(/org o_nope not found/);
    expect(() => admin(system, ['orgs', 'remove-member', '--org', 'o_nope'])).toThrow(/--user is required/);
    // Values the database could not store are refused in words, not with its SQL.
    expect(() => admin(system, ['orgs', 'create', '--name', 'n'.repeat(300), '--orgname', 'too-long-name'])).toThrow(/name must be 1-255 characters, without control characters\n$/);
    expect(() => admin(system, ['orgs', 'create', '--name', 'a\u0001b', '--orgname', 'control-name'])).toThrow(/name must be 1-255 characters/);
    expect(() => admin(system, ['orgs', 'create', '--name', 'Mail', '--orgname', 'bad-mail', '--email', 'notanemail'])).toThrow(/email must be an email address/);
    expect(() => admin(system, ['users', 'create', '--username', 'longmail', '--email', `a@${'b'.repeat(300)}`])).toThrow(/email must be an email address of at most 255 characters\n$/);
  });

  it('an open SSE stream ends once its key is rotated', async () => {
    const user = createUser(system);
    const source = await insertSource(system, user.id);
    const ac = new AbortController();
    const res = await fetch(`${system.origin}/sse/dc/${source}/emits`, { headers: { authorization: `Bearer ${user.apiKey}` }, signal: ac.signal });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain(':sse-handshake');
    admin(system, ['keys', 'rotate', '--user', user.id]);
    // The server ends the stream at its next keep-alive check (without it, this would read keep-alives until the abort).
    expect(await streamEnds(reader, ac, 20_000)).toBe(true);
  });
});
