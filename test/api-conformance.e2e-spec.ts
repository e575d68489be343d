import { createHash } from 'node:crypto';
import { createServer, Server } from 'node:http';
import { build } from 'esbuild';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/**
 * A Pipedream-style multi-file source served over HTTP: an app file with
 * app-specific prop types (`$.airtable.baseId`), a common module, and an entry
 * two levels down that imports `../../airtable.app.mjs` and spreads the common props.
 */
const FILES: Record<string, string> = {
  '/pd/airtable.app.mjs': `export default {
  type: "app",
  app: "airtable",
  propDefinitions: {
    baseId: { type: "$.airtable.baseId", appProp: "airtable" },
    tableId: { type: "$.airtable.tableId", baseIdProp: "baseId" },
  },
  methods: { tag() { return "airtable:" + this.$auth.api_key; } },
};`,
  '/pd/sources/common/common.mjs': `import airtable from "../../airtable.app.mjs";
export default {
  props: {
    airtable,
    http: { type: "$.interface.http" },
    baseId: { type: "$.airtable.baseId", appProp: "airtable" },
  },
  methods: { label() { return this.airtable.tag() + "/" + this.baseId; } },
};`,
  '/pd/sources/new-record/new-record.mjs': `import common from "../common/common.mjs";
export default {
  ...common,
  key: "airtable-new-record",
  name: "New Record",
  version: "0.0.1",
  props: {
    ...common.props,
    tableId: { propDefinition: [common.props.airtable, "tableId", ({ baseId }) => ({ baseId })] },
  },
  methods: { ...common.methods },
  async run(event) { this.$emit({ label: this.label(), tableId: this.tableId, body: event.body }); },
};`,
  '/ts/helper.ts': `export function greet(name: string): string { return "hi " + name; }`,
  '/ts/source.ts': `import { greet } from "./helper";
const component: { name: string; version: string; props: Record<string, unknown>; run(): Promise<void> } = {
  name: "TS Source",
  version: "0.1.0",
  props: { who: { type: "string", label: greet("label") } },
  async run() {},
};
export default component;`,
};

describe('API conformance: paths, cursors, bodies and real multi-file components', () => {
  let system: System;
  let user: TestUser;
  let server: Server;
  let origin: string;

  beforeAll(async () => {
    system = await startSystem();
    user = createUser(system);
    server = createServer((req, res) => {
      const body = FILES[req.url ?? ''];
      if (body === undefined) return void res.writeHead(404).end('not found');
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    server?.close();
    await system?.stop();
  });

  it('routes the paths the spec writes with a trailing slash', async () => {
    const api = client(system, createUser(system).apiKey);
    const created = await api.post('/sources/', { component_code: 'module.exports = { name: "Slash", version: "1", async run() {} };' });
    expect(created.status).toBe(200);
    expect(created.body.data.name_slug).toBe('slash');
    const list = await api.get('/users/me/sources/');
    expect(list.status).toBe(200);
    expect(list.body.data.map((s: { id: string }) => s.id)).toEqual([created.body.data.id]);
    expect((await api.get(`/sources/${created.body.data.id}/`)).status).toBe(200);
    expect((await api.get('/users/me/')).status).toBe(200);
    // `//` in a query value stays as sent (webhook URLs travel in the query string)
    const hook = await api.post('/webhooks/?url=https://example.com/a//b');
    expect(hook.body.data.url).toBe('https://example.com/a//b');
  });

  it('returns string cursors on every paginated response, an empty page included', async () => {
    const api = client(system, createUser(system).apiKey);
    const empty = await api.get('/users/me/sources');
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ page_info: { total_count: 0, count: 0, start_cursor: expect.any(String), end_cursor: expect.any(String) }, data: [] });
    const one = await api.post('/sources', { component_code: 'module.exports = { name: "Cursor", version: "1", async run() {} };' });
    const first = await api.get('/users/me/sources?limit=1');
    const past = await api.get(`/users/me/sources?limit=1&after=${first.body.page_info.end_cursor}`);
    expect(first.body.data[0].id).toBe(one.body.data.id);
    expect(past.body).toEqual({ page_info: { total_count: 1, count: 0, start_cursor: expect.any(String), end_cursor: expect.any(String) }, data: [] });
  });

  it('reads a JSON body sent without a JSON content type (curl -d without -H)', async () => {
    const res = await fetch(`${system.baseUrl}/components`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.apiKey}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: JSON.stringify({ component_code: 'module.exports = { name: "Form", version: "1", async run() {} };' }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { name: string } }).data.name).toBe('Form');
  });

  it('takes include / exclude in the body of a POST as in the query', async () => {
    const api = client(system, user.apiKey);
    const code = 'module.exports = { name: "Inc", version: "1", async run() {} };';
    const included = await api.post('/components', { component_code: code, include: 'id,name' });
    expect(included.status).toBe(200);
    expect(Object.keys(included.body.data).sort()).toEqual(['id', 'name']);
    const excluded = await api.post('/sources', { component_code: code, exclude: 'configured_props,user_id' });
    expect(excluded.body.data).not.toHaveProperty('configured_props');
    expect(excluded.body.data).not.toHaveProperty('user_id');
    expect(excluded.body.data.id).toMatch(/^dc_/);
  });

  it('names component_id among the inputs when POST /sources has none', async () => {
    const res = await client(system, user.apiKey).post('/sources', { name: 'nothing' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('component_id, component_code or component_url is required');
  });

  it('shows configurable_props as written: no customResponse on an HTTP prop that does not declare it', async () => {
    const api = client(system, user.apiKey);
    const res = await api.post('/components', { component_code: 'module.exports = { name: "H", version: "1", props: { http: "$.interface.http", h2: { type: "$.interface.http", customResponse: true } }, async run() {} };' });
    expect(res.body.data.configurable_props).toEqual([
      { name: 'http', type: '$.interface.http' },
      { name: 'h2', type: '$.interface.http', customResponse: true },
    ]);
  });

  it('saves a multi-file component_url with its entry as code, and deploys and runs it with app-specific prop types', async () => {
    const api = client(system, user.apiKey);
    const url = `${origin}/pd/sources/new-record/new-record.mjs`;
    const component = await api.post('/components', { component_url: url });
    expect(component.status).toBe(200);
    const entry = FILES['/pd/sources/new-record/new-record.mjs'];
    expect(component.body.data).toMatchObject({ key: 'airtable-new-record', code: entry, code_hash: sha256(entry), component_url: url });
    expect(component.body.data.configurable_props).toEqual([
      { name: 'airtable', type: 'app', app: 'airtable' },
      { name: 'http', type: '$.interface.http' },
      { name: 'baseId', type: '$.airtable.baseId', appProp: 'airtable' },
      { name: 'tableId', type: '$.airtable.tableId', baseIdProp: 'baseId' },
    ]);
    expect((await api.get(`/components/${component.body.data.id}`)).body.data.code).toBe(entry);

    const missing = await api.post('/sources', { component_id: component.body.data.id, configured_props: { airtable: { $auth: { api_key: 'k1' } } } });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatch(/configured_props\.baseId: is required/);

    const source = await api.post('/sources', { component_id: component.body.data.id, configured_props: { airtable: { $auth: { api_key: 'k1' } }, baseId: 'appXYZ', tableId: 'tblABC' } });
    expect(source.status).toBe(200);
    expect(source.body.data.configured_props).toMatchObject({ airtable: { $auth: '********' }, baseId: 'appXYZ', tableId: 'tblABC' });
    const hit = await fetch(source.body.data.configured_props.http.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });
    expect(hit.status).toBe(200);
    const summaries = await eventually(
      async () => {
        const list = await api.get(`/sources/${source.body.data.id}/event_summaries`);
        return list.body?.data?.length ? list.body.data : undefined;
      },
      { timeoutMs: 30_000, what: 'the event of the multi-file source' },
    );
    expect(summaries[0].event).toEqual({ label: 'airtable:k1/appXYZ', tableId: 'tblABC', body: { n: 1 } });
  });

  it('fetches a TypeScript component_url whose relative imports are TypeScript too', async () => {
    const url = `${origin}/ts/source.ts`;
    const res = await client(system, user.apiKey).post('/components', { component_url: url });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'TS Source', code: FILES['/ts/source.ts'], component_url: url });
    expect(res.body.data.configurable_props).toEqual([{ name: 'who', type: 'string', label: 'hi label' }]);
  });

  it('takes configured_props as JSON text in the query string of POST and PUT /sources', async () => {
    const api = client(system, user.apiKey);
    const code = 'module.exports = { name: "Q", version: "1", props: { s: { type: "string" } }, async run() {} };';
    const created = await api.post(`/sources?configured_props=${encodeURIComponent(JSON.stringify({ s: 'from query' }))}`, { component_code: code });
    expect(created.status).toBe(200);
    expect(created.body.data.configured_props).toEqual({ s: 'from query' });
    const updated = await api.put(`/sources/${created.body.data.id}?configured_props=${encodeURIComponent(JSON.stringify({ s: 'again' }))}`, { component_id: created.body.data.component_id });
    expect(updated.body.data.configured_props).toEqual({ s: 'again' });
    const bad = await api.post('/sources?configured_props=nope', { component_code: code });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('configured_props must be an object (in the query string: its JSON text)');
  });

  it('reads a CommonJS esbuild bundle of the ESM multi-file component (module.exports.default)', async () => {
    const out = await build({
      stdin: { contents: FILES['/pd/sources/new-record/new-record.mjs'], resolveDir: '/', sourcefile: 'entry.mjs' },
      bundle: true,
      write: false,
      format: 'cjs',
      platform: 'node',
      plugins: [{ name: 'files', setup(b) {
        b.onResolve({ filter: /^\./ }, (a) => ({ path: new URL(a.path, `http://x${a.namespace === 'f' ? a.importer : '/pd/sources/new-record/new-record.mjs'}`).pathname, namespace: 'f' }));
        b.onLoad({ filter: /.*/, namespace: 'f' }, (a) => ({ contents: FILES[a.path], loader: 'js' }));
      } }],
    });
    const code = out.outputFiles[0].text;
    expect(code).toContain('module.exports');
    const res = await client(system, user.apiKey).post('/components', { component_code: code });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ key: 'airtable-new-record', code, code_hash: sha256(code) });
    expect(res.body.data.configurable_props.map((p: { name: string; type: string }) => `${p.name}:${p.type}`)).toEqual(['airtable:app', 'http:$.interface.http', 'baseId:$.airtable.baseId', 'tableId:$.airtable.tableId']);
  });

  it('refuses an app-specific prop type without an app prop of that app, and code over the size limit, with 400', async () => {
    const api = client(system, user.apiKey);
    const noApp = await api.post('/components', { component_code: 'module.exports = { name: "A", version: "1", props: { baseId: { type: "$.airtable.baseId" } }, async run() {} };' });
    expect(noApp.status).toBe(400);
    expect(noApp.body).toEqual({ error: expect.stringMatching(/prop "baseId" has type "\$\.airtable\.baseId", which needs an app prop of app "airtable"/), code: 'invalid_component', details: expect.any(Object) });
    const big = await api.post('/components', { component_code: `module.exports = { name: "x", version: "1", async run() {} }; // ${'x'.repeat(5 * 1024 * 1024)}` });
    expect(big.status).toBe(400);
    expect(big.body).toEqual({ error: expect.stringMatching(/component code is \d+ bytes; the limit is 5242880/), code: 'invalid_component', details: expect.any(Object) });
  });
});
