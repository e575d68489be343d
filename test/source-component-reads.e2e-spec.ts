import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { client, createUser } from './support/accounts';
import { startSystem, System } from './support/system';

/**
 * An update of a source, its publishing, its answers and the options and reload routes read what they decide on
 * (props, meta, hashes), not the component's code and bundle (up to COMPONENT_MAX_BYTES each): the api works here as
 * a Postgres role that may not read those two columns, and answers them all.
 */
const SOURCE = (i: number) =>
  `module.exports = { name: "plain ${i}", version: "1", props: { n: { type: "integer", optional: true }, o: { type: "string", options: ["a", "b"], optional: true }, http: "$.interface.http" }, async run() {} };`;

describe('what a source reads of its component', () => {
  let system: System;
  let admin: Client;
  const role = `ess_no_code_${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    system = await startSystem({ COMPONENT_GC_INTERVAL_MS: '0' }, { apps: ['api'] });
    admin = new Client({ connectionString: system.databaseUrl });
    await admin.connect();
  });
  afterAll(async () => {
    await system?.stop();
    if (admin) {
      await admin.query(`drop owned by ${role}`).catch(() => undefined);
      await admin.query(`drop role if exists ${role}`).catch(() => undefined);
      await admin.end();
    }
  });

  /** The api restarted as a role that may read every column but components' code and bundle. */
  const apiWithoutCode = async () => {
    const { rows } = await admin.query<{ column_name: string }>(`select column_name from information_schema.columns where table_schema = 'public' and table_name = 'components' and column_name not in ('code', 'bundle')`);
    await admin.query(`create role ${role} login password 'no-code'`);
    await admin.query(`grant usage, create on schema public to ${role}`);
    await admin.query(`grant all on all tables in schema public to ${role}`);
    await admin.query(`grant all on all sequences in schema public to ${role}`);
    await admin.query(`revoke select on components from ${role}`);
    await admin.query(`grant select (${rows.map((r) => `"${r.column_name}"`).join(', ')}) on components to ${role}`);
    const url = new URL(system.databaseUrl);
    url.username = role;
    url.password = 'no-code';
    await system.stopApp('api');
    await system.startApp('api', 'api', { DATABASE_URL: url.toString() });
  };

  it('updates a source (to another component too), shows it, publishes it, and answers its options and reload routes', async () => {
    const a = client(system, createUser(system).apiKey);
    const components: string[] = [];
    for (let i = 0; i < 2; i++) {
      const c = await a.post('/components', { component_code: SOURCE(i) });
      expect(c.status).toBe(200);
      components.push(c.body.data.id);
    }
    const created = await a.post('/sources', { component_id: components[0], configured_props: { n: 0 } });
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    await apiWithoutCode();

    const put = await a.put(`/sources/${id}`, { component_id: components[0], configured_props: { n: 1, o: 'b' } });
    expect([put.status, put.body.data?.configured_props?.o]).toEqual([200, 'b']);
    const moved = await a.put(`/sources/${id}`, { component_id: components[1], configured_props: { n: 2 } });
    expect([moved.status, moved.body.data?.component_id]).toEqual([200, components[1]]);
    // Published: its desired state written with the component's hash, its code in the object store already.
    const { rows } = await admin.query<{ rev: number; published_rev: number }>(`select rev, published_rev from sources where id = $1`, [id]);
    expect(rows[0].published_rev).toBe(rows[0].rev);
    const shown = await a.get(`/sources/${id}`);
    expect([shown.status, shown.body.data?.configured_props?.n]).toEqual([200, 2]);
    const reload = await a.post(`/components/${components[1]}/props/reload`, { configured_props: { n: 3 }, source_id: id });
    expect([reload.status, reload.body.data?.configurable_props?.map((p: { name: string }) => p.name)]).toEqual([200, ['n', 'o', 'http']]);
    const options = await a.post(`/components/${components[1]}/props/o/options`, { configured_props: {}, source_id: id });
    expect([options.status, options.body.data]).toEqual([200, { options: ['a', 'b'], context: null }]);
    // The role is what it says: a route that shows the code cannot read it.
    expect((await a.get(`/components/${components[1]}`)).status).toBe(500);
  });
});
