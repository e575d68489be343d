import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admin, client, createUser } from './support/accounts';
import { freePort, startSystem, System } from './support/system';

// `npm start`'s demo account (plain JS, shared with scripts/start.js).
const { demoAccount } = require('../scripts/lib/demo-account') as { demoAccount: (dataDir: string, databaseUrl: string) => Promise<{ id: string; api_key: string }> };

describe('accounts, auth and common API behaviour', () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
  });
  afterAll(async () => system?.stop());

  it('rejects a missing, malformed or wrong key with 401 and the error body', async () => {
    const anon = client(system);
    const missing = await anon.get('/users/me');
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ error: expect.stringContaining('API key'), code: 'unauthorized' });
    const wrong = await client(system, 'pd_not-a-key').get('/users/me');
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe('unauthorized');
    const malformed = await anon.get('/users/me', { authorization: 'Basic abc' });
    expect(malformed.status).toBe(401);
  });

  it('returns the free form of the user with orgs and daily quotas', async () => {
    const user = createUser(system);
    const org = admin(system, ['orgs', 'create', '--name', 'Acme', '--orgname', `acme-${user.id.slice(3, 10)}`, '--email', 'ops@acme.test']);
    expect(org.id).toMatch(/^o_/);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', user.id]);
    const me = await client(system, user.apiKey).get('/users/me');
    expect(me.status).toBe(200);
    expect(me.body.data).toEqual({
      id: user.id,
      username: expect.any(String),
      email: expect.stringContaining('@example.com'),
      orgs: [{ name: 'Acme', id: org.id, orgname: org.orgname, email: 'ops@acme.test' }],
      daily_compute_time_quota: expect.any(Number),
      daily_compute_time_used: 0,
      daily_invocations_quota: expect.any(Number),
      daily_invocations_used: 0,
    });
  });

  it('gives each org of the free form four strings, an org made without an email "" (never null), as the OpenAPI document says', async () => {
    const user = createUser(system);
    const org = admin(system, ['orgs', 'create', '--name', 'No Mail', '--orgname', `nomail-${user.id.slice(3, 10)}`]);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', user.id]);
    const me = await client(system, user.apiKey).get('/users/me');
    expect(me.body.data.orgs).toEqual([{ name: 'No Mail', id: org.id, orgname: org.orgname, email: '' }]);
    const doc = (await client(system, user.apiKey).get('/openapi.json')).body;
    const schema = doc.paths['/v1/users/me'].get.responses['200'].content['application/json'].schema;
    const orgItem = schema.properties.data.properties.orgs.items;
    expect(orgItem.required.sort()).toEqual(['email', 'id', 'name', 'orgname']);
    for (const field of ['name', 'id', 'orgname', 'email']) expect([field, orgItem.properties[field]]).toEqual([field, { type: 'string' }]);
  });

  it('returns the paid form with billing period figures', async () => {
    const user = createUser(system, 'paid');
    const me = await client(system, user.apiKey).get('/users/me');
    expect(me.status).toBe(200);
    const d = me.body.data;
    expect(Object.keys(d).sort()).toEqual(['billing_period_end_ts', 'billing_period_invocations', 'billing_period_start_ts', 'email', 'id', 'username']);
    expect(d.billing_period_start_ts).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(d.billing_period_end_ts).toBeGreaterThan(Math.floor(Date.now() / 1000));
    admin(system, ['users', 'set-plan', '--user', user.id, '--plan', 'free']);
  });

  it('rotating a key revokes the old one', async () => {
    const user = createUser(system);
    const rotated = admin(system, ['keys', 'rotate', '--user', user.id]);
    expect(rotated.api_key).not.toEqual(user.apiKey);
    expect((await client(system, rotated.api_key).get('/users/me')).status).toBe(200);
    // Nothing is cached: the old key is refused on the very next request.
    expect((await client(system, user.apiKey).get('/users/me')).status).toBe(401);
  });

  it('applies include and exclude to returned objects', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    expect(Object.keys((await api.get('/users/me?include=id,email')).body.data).sort()).toEqual(['email', 'id']);
    expect((await api.get('/users/me?exclude=orgs')).body.data.orgs).toBeUndefined();
  });

  it('answers unknown routes with 404 in the error body', async () => {
    const user = createUser(system);
    const res = await client(system, user.apiKey).get('/no/such/route');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String), code: 'not_found' });
  });

  it('answers malformed JSON with 400 on a route that takes a body; on a path without that method, 405 first', async () => {
    const user = createUser(system);
    const post = (path: string) => fetch(`${system.baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${user.apiKey}`, 'content-type': 'application/json' }, body: '{oops' });
    const res = await post('/webhooks');
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'the request body is not valid JSON', code: 'invalid_request' });
    // Answered before its body is read (docs/api.md): the method is refused whatever the body holds.
    const other = await post('/users/me');
    expect(other.status).toBe(405);
    expect(other.headers.get('allow')).toBe('GET, HEAD');
    expect(await other.json()).toMatchObject({ code: 'method_not_allowed' });
  });

  it('npm start\'s demo account: kept in DATA_DIR, and a fresh DATA_DIR on the same database gets a working key', async () => {
    const dirs = [mkdtempSync(join(tmpdir(), 'demo-a-')), mkdtempSync(join(tmpdir(), 'demo-b-'))];
    try {
      const first = await demoAccount(dirs[0], system.databaseUrl);
      expect(await demoAccount(dirs[0], system.databaseUrl)).toEqual(first);
      // The database outlives the data directory (a shared local Postgres, a new clone): the user exists already.
      const second = await demoAccount(dirs[1], system.databaseUrl);
      expect(second.id).toBe(first.id);
      const me = await client(system, second.api_key).get('/users/me');
      expect(me.status).toBe(200);
      expect(me.body.data.username).toBe('demo');
      // The first directory's key was rotated away: its next start issues a new one.
      const again = await demoAccount(dirs[0], system.databaseUrl);
      expect(again.api_key).not.toBe(first.api_key);
      expect((await client(system, again.api_key).get('/users/me')).status).toBe(200);
    } finally {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    }
  });

  it('admin CLI refuses bad input with a clear error', () => {
    expect(() => admin(system, ['users', 'create', '--username', 'x'])).toThrow(/--email is required/);
    expect(() => admin(system, ['users', 'set-plan', '--user', 'u_nope', '--plan', 'paid'])).toThrow(/user u_nope not found/);
    expect(() => admin(system, ['orgs', 'create', '--name', 'A', '--orgname', 'Bad Slug'])).toThrow(/orgname/);
    // A flag without its value, or one the command does not take, is a usage error (64) and changes nothing.
    const name = `nov${Date.now() % 1_000_000}`;
    expect(() => admin(system, ['users', 'create', '--username', '--email', `${name}@example.com`])).toThrow(/failed \(64\): error: --username needs a value/);
    expect(() => admin(system, ['users', 'create', '--username', name, '--email', `${name}@example.com`, '--plann', 'paid'])).toThrow(
      /failed \(64\): error: unknown flag --plann for "users create" \(it takes --username, --email, --plan\)/,
    );
    expect(() => admin(system, ['keys', 'rotate', '--user'])).toThrow(/failed \(64\): error: --user needs a value/);
    expect(() => admin(system, ['sources', 'set-timeout', '--seconds', '5'])).toThrow(/failed \(64\): error: --source is required/);
    expect(() => admin(system, ['registry', 'publish'])).toThrow(/failed \(64\): error: usage: registry publish <file>/);
    // Neither made a user: the name is still free.
    expect(admin(system, ['users', 'create', '--username', name, '--email', `${name}@example.com`])).toMatchObject({ username: name, plan: 'free' });
  });

  it('admin CLI and npm run migrate name the Postgres they cannot reach (its password masked), in one line', async () => {
    const port = await freePort();
    const url = `postgres://postgres:hunter2@127.0.0.1:${port}/nowhere`;
    const line = `cannot connect to Postgres at DATABASE_URL (postgres://***@127.0.0.1:${port}/nowhere): connect ECONNREFUSED 127.0.0.1:${port}\n`;
    const env = { ...process.env, DATABASE_URL: url, DATA_DIR: system.env.DATA_DIR };
    const root = join(__dirname, '..');
    const cli = spawnSync(process.execPath, [join(root, 'scripts', 'admin.js'), 'users', 'create', '--username', 'x', '--email', 'x@example.com'], { env, encoding: 'utf8' });
    expect({ status: cli.status, stderr: cli.stderr, stdout: cli.stdout }).toEqual({ status: 1, stderr: `error: ${line}`, stdout: '' });
    const migrate = spawnSync(process.execPath, [join(root, 'dist', 'libs', 'db', 'src', 'migrate.js')], { env, encoding: 'utf8' });
    expect({ status: migrate.status, stderr: migrate.stderr }).toEqual({ status: 1, stderr: `migration failed: ${line}` });
  });
});
