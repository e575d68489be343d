import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

const { resolvePostgres } = require('../scripts/lib/infra') as {
  resolvePostgres(o: { dataDir: string; dbName?: string; env?: Record<string, string>; localPort?: number; claim?: boolean }): Promise<{ url: string; how: string }>;
};

/**
 * npm start, the admin CLI and npm run cluster find Postgres without a DATABASE_URL on 127.0.0.1:5432 (README, quick
 * start), as every other DATA_DIR on the machine does. Two installations used one database, each with its own NATS
 * and secrets key: webhook secrets the other could not decrypt, sources whose runners were elsewhere. Now a database
 * belongs to the first DATA_DIR that uses it, and another DATA_DIR gets one of its own, and says why.
 */
describe('a database per DATA_DIR on a shared Postgres server', () => {
  const admin = new URL(process.env.TEST_PG_ADMIN_URL!);
  const localPort = Number(admin.port || 5432);
  const prefix = `ess_claim_${randomBytes(3).toString('hex')}`;
  const dirs: string[] = [];

  const dataDir = (secretsKey = false): string => {
    const dir = mkdtempSync(join(tmpdir(), 'db-claim-'));
    if (secretsKey) writeFileSync(join(dir, 'secrets.key'), randomBytes(32).toString('hex'));
    dirs.push(dir);
    return dir;
  };
  const idOf = (dir: string): string => readFileSync(join(dir, 'database-claim'), 'utf8').trim();
  const resolve = (dir: string, dbName: string, claim = true) => resolvePostgres({ dataDir: dir, dbName, env: {}, localPort, claim });
  const dbOf = (url: string): string => new URL(url).pathname.slice(1);

  async function sql<T>(database: string, text: string): Promise<T[]> {
    const url = new URL(process.env.TEST_PG_ADMIN_URL!);
    url.pathname = `/${database}`;
    const c = new Client({ connectionString: url.toString() });
    await c.connect();
    try {
      return (await c.query(text)).rows as T[];
    } finally {
      await c.end();
    }
  }

  afterAll(async () => {
    const dbs = await sql<{ datname: string }>('postgres', `select datname from pg_database where datname like '${prefix}%'`);
    for (const { datname } of dbs) await sql('postgres', `drop database if exists "${datname}" with (force)`);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('gives a second DATA_DIR a database of its own, says why, and each finds its own again', async () => {
    const name = `${prefix}_a`;
    const [a, b] = [dataDir(), dataDir()];
    const first = await resolve(a, name);
    expect(dbOf(first.url)).toBe(name);
    expect(first.how).toBe(`local server on 127.0.0.1:${localPort}`);

    const second = await resolve(b, name);
    expect(dbOf(second.url)).toBe(`${name}_${idOf(b)}`);
    expect(second.how).toBe(`local server on 127.0.0.1:${localPort}, database ${name}_${idOf(b)} (database ${name} belongs to the DATA_DIR ${a})`);

    expect(dbOf((await resolve(a, name)).url)).toBe(name);
    expect(dbOf((await resolve(b, name)).url)).toBe(`${name}_${idOf(b)}`);
    // Their data apart: a table made through one is not in the other.
    await sql(dbOf(first.url), 'create table only_a (x int)');
    expect(await sql(dbOf(second.url), `select 1 from pg_tables where tablename = 'only_a'`)).toEqual([]);
  });

  it('leaves the data of an installation from before claims to a DATA_DIR that has run before, not to a new one', async () => {
    const name = `${prefix}_b`;
    await sql('postgres', `create database "${name}"`);
    await sql(name, 'create table earlier (x int)');
    const fresh = dataDir();
    const used = dataDir(true); // its secrets key is there: it has run before

    const refused = await resolve(fresh, name);
    expect(dbOf(refused.url)).toBe(`${name}_${idOf(fresh)}`);
    expect(refused.how).toContain(`(database ${name} holds the tables of an installation whose DATA_DIR is not known (this one is new))`);

    expect(dbOf((await resolve(used, name)).url)).toBe(name);
    expect((await resolve(fresh, name)).how).toContain(`(database ${name} belongs to the DATA_DIR ${used})`);
    // SECRETS_KEY given instead of a key file counts as having run before too.
    const withKey = dataDir();
    const other = `${prefix}_c`;
    await sql('postgres', `create database "${other}"`);
    await sql(other, 'create table earlier (x int)');
    expect(dbOf((await resolvePostgres({ dataDir: withKey, dbName: other, env: { SECRETS_KEY: 'k'.repeat(64) }, localPort })).url)).toBe(other);
  });

  it('lets one of several first starts at once claim a new database, the others get their own', async () => {
    const name = `${prefix}_d`;
    const many = [dataDir(), dataDir(), dataDir(), dataDir()];
    const urls = await Promise.all(many.map((d) => resolve(d, name)));
    const names = urls.map((u) => dbOf(u.url));
    expect(names.filter((n) => n === name)).toHaveLength(1);
    many.forEach((d, i) => expect([name, `${name}_${idOf(d)}`]).toContain(names[i]));
  });

  it('gives one new DATA_DIR one id and one database when two processes start with it at once (npm start and the admin CLI)', async () => {
    const name = `${prefix}_f`;
    await resolve(dataDir(), name); // claimed by another: both processes make the DATA_DIR's own database
    const shared = dataDir();
    const script = `require(${JSON.stringify(join(__dirname, '..', 'scripts', 'lib', 'infra.js'))}).resolvePostgres({ dataDir: ${JSON.stringify(shared)}, dbName: ${JSON.stringify(name)}, env: {}, localPort: ${localPort} }).then((pg) => console.log(pg.url), (e) => { console.log('failed: ' + e.message); process.exit(1); })`;
    const run = () => new Promise<string>((done) => execFile(process.execPath, ['-e', script], (_err, stdout) => done(stdout.trim())));
    const urls = await Promise.all([run(), run()]);
    expect(urls.map(dbOf)).toEqual([`${name}_${idOf(shared)}`, `${name}_${idOf(shared)}`]);
  });

  it('leaves a run of the tests or benchmarks its own name (claim: false)', async () => {
    const name = `${prefix}_e`;
    await resolve(dataDir(), name);
    expect(dbOf((await resolve(dataDir(), name, false)).url)).toBe(name);
  });
});
