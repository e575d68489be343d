import { createServer, Server } from 'node:http';
import { admin, client, createUser, TestUser } from './support/accounts';
import { sql } from './events.helpers';
import { startSystem, System } from './support/system';

/**
 * A `component_url` may carry credentials for a private host (`https://user:token@host/x.mjs`, `?token=…`): the fetch
 * uses them, and they are never kept or shown — not to the member who gave them, not to the org's other members, not
 * in an error — the URL is kept with its user info and its query's values as `********`.
 */
const ENTRY = `import { greet } from "./helper.mjs";
export default { key: "private-url", name: "Private URL", version: "0.0.1", type: "source", props: {}, async run() { this.$emit({ hi: greet() }); } };`;
const HELPER = 'export const greet = () => "hi";';
const AUTH = `Basic ${Buffer.from('deployer:pat-secret-1').toString('base64')}`;

describe('component_url with credentials', () => {
  let system: System;
  let owner: TestUser;
  let member: TestUser;
  let orgId: string;
  let server: Server;
  let host: string;

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
    [owner, member] = [createUser(system), createUser(system)];
    orgId = admin(system, ['orgs', 'create', '--name', 'Private', '--orgname', `private-${owner.id.slice(2, 12).toLowerCase()}`]).id;
    for (const u of [owner, member]) admin(system, ['orgs', 'add-member', '--org', orgId, '--user', u.id]);
    server = createServer((req, res) => {
      const body = ({ '/private/entry.mjs': ENTRY, '/private/helper.mjs': HELPER, '/private/broken.mjs': ENTRY.replace('./helper.mjs', './gone.mjs') } as Record<string, string>)[(req.url ?? '').split('?')[0]];
      if (req.headers.authorization !== AUTH) return void res.writeHead(401).end('who are you?');
      if (body === undefined) return void res.writeHead(404).end('not found');
      res.writeHead(200, { 'content-type': 'application/javascript' }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    host = `127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    await system?.stop();
  });

  const secrets = /pat-secret-1|qry-secret-1|deployer/;

  it('fetches with them, and keeps and shows the URL with them as ********, to every member', async () => {
    const url = `http://deployer:pat-secret-1@${host}/private/entry.mjs?token=qry-secret-1&ref=main`;
    const shown = `http://********@${host}/private/entry.mjs?token=********&ref=********`;
    const saved = await client(system, owner.apiKey).post(`/components?org_id=${orgId}`, { component_url: url });
    expect([saved.status, saved.body.data?.component_url, saved.body.data?.key]).toEqual([200, shown, 'private-url']);
    const read = await client(system, member.apiKey).get(`/components/${saved.body.data.id}`);
    expect([read.status, read.body.data?.component_url]).toEqual([200, shown]);
    const source = await client(system, owner.apiKey).post(`/sources?org_id=${orgId}`, { component_url: url });
    expect(source.status).toBe(200);
    const its = await client(system, member.apiKey).get(`/components/${source.body.data.component_id}`);
    expect([its.status, its.body.data?.component_url]).toEqual([200, shown]);
    const rows = await sql<{ component_url: string }>(system, 'select component_url from components where owner_id = $1', [orgId]);
    expect(rows.map((r) => r.component_url)).toEqual([shown, shown]);
    expect(saved.text + read.text + source.text + its.text).not.toMatch(secrets);
  });

  it('never quotes them in an error', async () => {
    const missing = await client(system, owner.apiKey).post('/components', { component_url: `http://deployer:pat-secret-1@${host}/private/nope.mjs?token=qry-secret-1` });
    expect([missing.status, missing.body.error]).toEqual([400, `component_url: http://********@${host}/private/nope.mjs?token=******** answered 404`]);
    const refused = await client(system, owner.apiKey).post('/components', { component_url: `http://deployer:wrong@${host}/private/entry.mjs` });
    expect([refused.status, refused.body.error]).toEqual([400, `component_url: http://********@${host}/private/entry.mjs answered 401`]);
    const broken = await client(system, owner.apiKey).post('/components', { component_url: `http://deployer:pat-secret-1@${host}/private/broken.mjs` });
    expect([broken.status, broken.body.error]).toEqual([400, expect.stringMatching(/^component_url: cannot bundle http:\/\/\*{8}@.*gone\.mjs not found/)]);
    const scheme = await client(system, owner.apiKey).post('/components', { component_url: 'ftp://deployer:pat-secret-1@files.example.com/x.mjs?token=qry-secret-1' });
    expect([scheme.status, scheme.body.error, scheme.body.details]).toEqual([400, 'component_url must use http or https, not ftp', { field: 'component_url', value: 'ftp://********@files.example.com/x.mjs?token=********' }]);
    expect(missing.text + refused.text + broken.text + scheme.text).not.toMatch(/pat-secret-1|qry-secret-1|deployer|wrong/);
    expect(system.logs('api')).not.toMatch(secrets);
  });
});
