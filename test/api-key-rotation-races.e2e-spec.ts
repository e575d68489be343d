import { withOrm } from '@app/db';
import { AccountsService } from '../apps/api/src/accounts/accounts.service';
import { client, createUser } from './support/accounts';
import { startSystem, System } from './support/system';

/**
 * `keys rotate` revokes every key of the user and issues one: two operators (or a retried script) rotating the same
 * user at once must not leave both new keys working. Before, each rotation revoked the keys it saw and then inserted
 * its own, so eight rotations at once left eight valid keys. The rotations run through the admin CLI's use case
 * (AccountsService) in one process, so that they really overlap.
 */
describe('API key rotations at the same time', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({ REGISTRY_DIR: 'off' }, { apps: ['api'] });
  });
  afterAll(async () => system?.stop());

  it('leave exactly one working key, and a revocation at the same time as them is not undone by one', async () => {
    const user = createUser(system);
    const keys = await withOrm(system.databaseUrl, (orm) => Promise.all(Array.from({ length: 8 }, () => new AccountsService(orm.em.fork()).rotateKey(user.id))));
    const statuses = await Promise.all([user.apiKey, ...keys].map(async (k) => (await client(system, k).get('/users/me')).status));
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 401)).toHaveLength(8);

    // A revocation issued with rotations: whichever order they take, the keys still valid after all of them are at
    // most one (none when the revocation came last).
    const after = await withOrm(system.databaseUrl, async (orm) => {
      const accounts = () => new AccountsService(orm.em.fork());
      const issued = await Promise.all([accounts().rotateKey(user.id), accounts().revokeKeys(user.id).then(() => ''), accounts().rotateKey(user.id)]);
      const [row] = (await orm.em.fork().getConnection().execute(`select count(*)::int as n from api_keys where user_id = ? and revoked_at is null`, [user.id])) as { n: number }[];
      return { issued: issued.filter(Boolean), valid: row.n };
    });
    expect(after.valid).toBeLessThanOrEqual(1);
    const working = await Promise.all(after.issued.map(async (k) => (await client(system, k).get('/users/me')).status));
    expect(working.filter((s) => s === 200)).toHaveLength(after.valid);
  });
});
