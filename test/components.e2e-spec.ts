import { createHash } from 'node:crypto';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { admin, client, createUser, TestUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { startSystem, System } from './support/system';

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** A realistic multi-file component: app file, common module with props spread, entry two levels down. */
const FILES: Record<string, string> = {
  'acme.app.mjs': `export default {
  type: "app",
  app: "acme",
  propDefinitions: {
    project: { type: "string", label: "Project", description: "An Acme project", async options({ page, prevContext }) {
      return { options: [{ label: "P" + page, value: "p" + page }], context: { nextPageToken: "t" + (page + 1), prev: prevContext ?? null } };
    } },
    limit: { type: "integer", label: "Limit", min: 1, max: 50, optional: true, default: 10 },
  },
  methods: { baseUrl() { return "https://api.acme.test"; } },
};`,
  'sources/common/base.mjs': `import acme from "../../acme.app.mjs";
export default {
  props: {
    acme,
    db: "$.service.db",
    project: { propDefinition: [acme, "project"] },
  },
  methods: { url() { return this.acme.baseUrl(); } },
};`,
  'sources/new-issue/new-issue.mjs': `import common from "../common/base.mjs";
import { axios } from "@pipedream/platform";
export default {
  ...common,
  key: "acme-new-issue",
  name: "New Issue",
  version: "0.2.0",
  dedupe: "unique",
  props: {
    ...common.props,
    timer: { type: "$.interface.timer", default: { intervalSeconds: 300 } },
    max: { propDefinition: [common.props.acme, "limit"], label: "Max issues" },
  },
  methods: { ...common.methods },
  async run() { const data = await axios(this, { url: this.url() }); this.$emit(data); },
};`,
};

/** The same component as CommonJS files with extension-less requires, served over HTTP. */
const CJS_FILES: Record<string, string> = {
  '/c/acme.app.js': `module.exports = { type: "app", app: "acme", propDefinitions: { project: { type: "string", label: "Project" } } };`,
  '/c/sources/common/base.js': `const acme = require("../../acme.app");\nmodule.exports = { props: { acme, project: { propDefinition: [acme, "project"] } } };`,
  '/c/sources/new-issue/new-issue.js': `const common = require("../common/base");\nconst _ = require("lodash");\nmodule.exports = { ...common, key: "acme-cjs-issue", name: "CJS Issue", version: "1.0.0", props: { ...common.props, http: "$.interface.http" }, async run() {} };`,
  '/single.mjs': `export default { name: "Single", version: "1", props: { s: { type: "string", label: "S" } }, async run() {} };`,
};

describe('components', () => {
  let system: System;
  let user: TestUser;
  let server: Server;
  let serverUrl: string;
  const served: Record<string, string> = { ...CJS_FILES, ...Object.fromEntries(Object.entries(FILES).map(([k, v]) => [`/m/${k}`, v])) };

  beforeAll(async () => {
    system = await startSystem({ COMPONENT_MAX_BYTES: '32768' }, { apps: ['api'] });
    user = createUser(system);
    server = createServer((req, res) => {
      const body = served[req.url ?? ''];
      if (req.url === '/redirect') return void res.writeHead(302, { location: '/single.mjs' }).end();
      if (body === undefined) return void res.writeHead(404).end('not found');
      res.writeHead(200, { 'content-type': 'application/javascript' }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    serverUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    server?.close();
    await system?.stop();
  });

  it('saves a CommonJS component and returns the spec Component', async () => {
    const api = client(system, user.apiKey);
    const res = await api.post('/components', { component_code: HTTP_SOURCE });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      id: expect.stringMatching(/^sc_/),
      code: HTTP_SOURCE,
      code_hash: sha256(HTTP_SOURCE),
      name: 'Test HTTP Source',
      version: '0.0.1',
      key: 'test-http-source',
      type: 'source',
      configurable_props: [
        { name: 'http', type: '$.interface.http' },
        { name: 'db', type: '$.service.db' },
      ],
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
    });
    const byId = await api.get(`/components/${res.body.data.id}`);
    expect(byId.body.data).toEqual(res.body.data);
  });

  it('reads ESM forms: export default, export { x as default }, and npm imports at top level', async () => {
    const api = client(system, user.apiKey);
    const a = await api.post('/components', { component_code: `import _ from "lodash";\nimport { axios } from "@pipedream/platform";\nexport default { name: "Esm A", version: "1.0.0", props: { n: { type: "integer", label: "N", min: 0 } }, async run() { return _.identity(axios); } };` });
    expect(a.status).toBe(200);
    expect(a.body.data.configurable_props).toEqual([{ name: 'n', type: 'integer', label: 'N', min: 0 }]);
    const b = await api.post('/components', { component_code: `const c = { name: "Esm B", version: "2", type: "action", props: { db: "$.service.db" }, async run({ $ }) { return 1; } };\nexport { c as default };` });
    expect(b.status).toBe(200);
    expect(b.body.data).toMatchObject({ name: 'Esm B', type: 'action', configurable_props: [{ name: 'db', type: '$.service.db' }] });
  });

  it('reads an esbuild bundle of a multi-file component (app file, common/ module, object spread, propDefinition)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'comp-'));
    for (const [path, text] of Object.entries(FILES)) {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    const out = await build({ entryPoints: [join(dir, 'sources/new-issue/new-issue.mjs')], bundle: true, write: false, format: 'esm', platform: 'node', packages: 'external' });
    const code = out.outputFiles[0].text;
    const api = client(system, user.apiKey);
    const res = await api.post('/components', { component_code: code });
    expect(res.status).toBe(200);
    expect(res.body.data.code).toBe(code);
    expect(res.body.data.key).toBe('acme-new-issue');
    expect(res.body.data.configurable_props).toEqual([
      { name: 'acme', type: 'app', app: 'acme' },
      { name: 'db', type: '$.service.db' },
      { name: 'project', type: 'string', label: 'Project', description: 'An Acme project', remoteOptions: true },
      { name: 'timer', type: '$.interface.timer', default: { intervalSeconds: 300 } },
      { name: 'max', type: 'integer', label: 'Max issues', optional: true, default: 10, min: 1, max: 50 },
    ]);
    // async options() through the propDefinition, paged
    const opts = await api.post(`/components/${res.body.data.id}/props/project/options`, { page: 2, prevContext: 'abc' });
    expect(opts.status).toBe(200);
    expect(opts.body.data).toEqual({ options: [{ label: 'P2', value: 'p2' }], context: { nextPageToken: 't3', prev: 'abc' } });
    const stat = await api.post(`/components/${res.body.data.id}/props/max/options`, {});
    expect(stat.body.data).toEqual({ options: [], context: null });
    expect((await api.post(`/components/${res.body.data.id}/props/nope/options`, {})).status).toBe(404);
    expect((await api.post(`/components/${res.body.data.id}/props/project/options`, { page: -1 })).status).toBe(400);
    // a source of the bundle deploys with its props
    const src = await api.post('/sources', { component_id: res.body.data.id, configured_props: { project: 'p1', acme: { $auth: { api_key: 'k' } } } });
    expect(src.status).toBe(200);
    expect(src.body.data.configured_props).toEqual({ acme: { $auth: '********' }, project: 'p1', timer: { cron: null, interval_seconds: 300 }, max: 10 });
  });

  it('fetches component_url, resolving extension-less relative requires against the URL; keeps the URL as metadata', async () => {
    const api = client(system, user.apiKey);
    const url = `${serverUrl}/c/sources/new-issue/new-issue.js`;
    const res = await api.post('/components', { component_url: url });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ key: 'acme-cjs-issue', component_url: url, code_hash: sha256(res.body.data.code) });
    expect(res.body.data.configurable_props).toEqual([
      { name: 'acme', type: 'app', app: 'acme' },
      { name: 'project', type: 'string', label: 'Project' },
      { name: 'http', type: '$.interface.http' },
    ]);
    // `code` is the entry file as served; its relative imports are bundled for the runner only
    expect(res.body.data.code).toBe(CJS_FILES['/c/sources/new-issue/new-issue.js']);
    // a file without relative imports is kept exactly; redirects are followed
    const single = await api.post('/components', { component_url: `${serverUrl}/redirect` });
    expect(single.status).toBe(200);
    expect(single.body.data.code).toBe(CJS_FILES['/single.mjs']);
    // code and URL: the code wins, the URL is metadata
    const both = await api.post('/components', { component_code: HTTP_SOURCE, component_url: `${serverUrl}/single.mjs` });
    expect(both.body.data).toMatchObject({ name: 'Test HTTP Source', code: HTTP_SOURCE, component_url: `${serverUrl}/single.mjs` });
    // a source straight from a URL
    const src = await api.post('/sources', { component_url: `${serverUrl}/single.mjs`, configured_props: { s: 'v' } });
    expect(src.status).toBe(200);
    expect(src.body.data).toMatchObject({ name: 'single', configured_props: { s: 'v' } });
  });

  it('fetches an ESM component_url with ../../app.mjs and common/ imports composed by object spread', async () => {
    const api = client(system, user.apiKey);
    const res = await api.post('/components', { component_url: `${serverUrl}/m/sources/new-issue/new-issue.mjs` });
    expect(res.status).toBe(200);
    expect(res.body.data.key).toBe('acme-new-issue');
    expect(res.body.data.configurable_props.map((p: { name: string }) => p.name)).toEqual(['acme', 'db', 'project', 'timer', 'max']);
    const opts = await api.post(`/components/${res.body.data.id}/props/project/options`, { page: 0 });
    expect(opts.body.data.options).toEqual([{ label: 'P0', value: 'p0' }]);
  });

  it.each([
    [{ component_url: 'ftp://example.com/x.js' }, /http or https/],
    [{ component_url: 'not a url' }, /not a valid URL|absolute/],
    [{ component_url: 'http://127.0.0.1:1/nothing.js' }, /component_url/],
  ])('refuses a bad component_url %j', async (body, message) => {
    const res = await client(system, user.apiKey).post('/components', body);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(message);
  });

  it('refuses a URL whose relative import is missing, naming it', async () => {
    served['/broken.js'] = 'const x = require("./missing");\nmodule.exports = { name: "B", version: "1", async run() {} };';
    const res = await client(system, user.apiKey).post('/components', { component_url: `${serverUrl}/broken.js` });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/missing/);
  });

  const src = (body: string): string => `module.exports = { name: "V", version: "1", ${body} };`;
  it.each([
    ['missing name', 'module.exports = { version: "1", async run() {} };', /no name/],
    ['missing version', 'module.exports = { name: "x", async run() {} };', /no version/],
    ['missing run', 'module.exports = { name: "x", version: "1" };', /no run method/],
    ['unknown prop type', src('props: { x: { type: "date" } }, async run() {}'), /prop "x" has unknown type "date"/],
    ['interface in an action', src('type: "action", props: { t: { type: "$.interface.timer" } }, async run() {}'), /prop "t": \$\.interface\.timer is for sources only/],
    ['hooks in an action', src('type: "action", hooks: { async deploy() {} }, async run() {}'), /hooks are for sources only/],
    ['unknown dedupe', src('dedupe: "first", async run() {}'), /unknown dedupe strategy "first"/],
    ['min on a string', src('props: { x: { type: "string", min: 1 } }, async run() {}'), /prop "x": min is allowed on integer props only/],
    ['max on a boolean', src('props: { x: { type: "boolean", max: 1 } }, async run() {}'), /prop "x": max is allowed on integer props only/],
    ['secret on a non-string', src('props: { x: { type: "integer", secret: true } }, async run() {}'), /prop "x": secret is allowed on string props only/],
    ['app hooks', src('props: { h: { type: "$.interface.apphook", appProp: "a", eventNames: ["x"] } }, async run() {}'), /prop "h": appProp "a" is not an app prop of this component/],
    ['code that throws on load', 'throw new Error("boom at load");', /cannot load the component: boom at load/],
    ['a syntax error', 'module.exports = { name: ', /cannot load the component/],
    ['no exported object', 'module.exports = 42;', /cannot load the component/],
    ['a relative import in submitted code', 'const x = require("./other");\nmodule.exports = { name: "x", version: "1", async run() {} };', /cannot resolve "\.\/other"/],
  ])('refuses %s with a 400 naming the problem', async (_what, code, message) => {
    const res = await client(system, user.apiKey).post('/components', { component_code: code });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.stringMatching(message), code: 'invalid_component', details: expect.any(Object) });
  });

  it('refuses at save a timer default a source could not deploy with: a bad cron or timezone (not at POST /sources)', async () => {
    const api = client(system, user.apiKey);
    const timer = (d: string): string => src(`props: { t: { type: "$.interface.timer", default: ${d} } }, async run() {}`);
    const cron = await api.post('/components', { component_code: timer('{ cron: "bogus cron" }') });
    expect([cron.status, cron.body]).toEqual([400, { error: 'prop "t": a timer default must be a timer value: cron must have 5 fields (minute hour day-of-month month day-of-week), got "bogus cron"', code: 'invalid_component', details: { prop: 't' } }]);
    const zone = await api.post('/components', { component_code: timer('{ cron: "0 * * * *", timezone: "Mars/Olympus" }') });
    expect([zone.status, zone.body]).toEqual([400, { error: 'prop "t": a timer default must be a timer value: unknown timezone "Mars/Olympus"', code: 'invalid_component', details: { prop: 't' } }]);
    const good = await api.post('/components', { component_code: timer('{ cron: "0 * * * *", timezone: "Europe/Paris" }') });
    expect(good.status).toBe(200);
    expect((await api.post('/sources', { component_id: good.body.data.id })).status).toBe(200);
  });

  it('checks a component_url given beside component_code or component_id as when it is alone', async () => {
    const api = client(system, user.apiKey);
    const refused = { error: 'component_url must be an absolute http or https URL with a hostname, e.g. https://example.com/source.mjs', code: 'invalid_request', details: { field: 'component_url', value: 'notaurl' } };
    const alone = await api.post('/components', { component_url: 'notaurl' });
    expect([alone.status, alone.body]).toEqual([400, refused]);
    const withCode = await api.post('/components', { component_code: HTTP_SOURCE, component_url: 'notaurl' });
    expect([withCode.status, withCode.body]).toEqual([400, refused]);
    const source = await api.post('/sources', { component_code: HTTP_SOURCE, component_url: 'notaurl' });
    expect([source.status, source.body]).toEqual([400, refused]);
    const saved = await api.post('/components', { component_code: HTTP_SOURCE, component_url: 'https://example.com/source.mjs' });
    expect([saved.status, saved.body.data.component_url]).toEqual([200, 'https://example.com/source.mjs']);
    const sourceId = (await api.post('/sources', { component_id: saved.body.data.id })).body.data.id;
    for (const res of [await api.post('/sources', { component_id: saved.body.data.id, component_url: 'notaurl' }), await api.put(`/sources/${sourceId}`, { component_id: saved.body.data.id, component_url: 'notaurl' })]) {
      expect([res.status, res.body]).toEqual([400, refused]);
    }
  });

  it('refuses code over the size limit, missing input and unknown fields with 400', async () => {
    const api = client(system, user.apiKey);
    const big = await api.post('/components', { component_code: `module.exports = { name: "x", version: "1", async run() {} }; // ${'x'.repeat(40_000)}` });
    expect(big.status).toBe(400);
    expect(big.body).toEqual({ error: expect.stringMatching(/component code is \d+ bytes; the limit is 32768/), code: 'invalid_component', details: { field: 'component_code', limit_bytes: 32768 } });
    const none = await api.post('/components', {});
    expect(none.status).toBe(400);
    expect(none.body.error).toMatch(/component_code or component_url is required/);
    const extra = await api.post('/components', { component_code: HTTP_SOURCE, owner_id: 'u_x' });
    expect(extra.status).toBe(400);
    expect(extra.body.error).toMatch(/unknown field: owner_id/);
  });

  it('resolves a key in the caller namespace (newest wins) and in an org with org_id; others get 404', async () => {
    const owner = createUser(system);
    const other = createUser(system);
    // membership first: the api caches a key's orgs for a few seconds
    const org = admin(system, ['orgs', 'create', '--name', 'Comp Org', '--orgname', `comp-${owner.id.slice(3, 12)}`]);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', owner.id]);
    const api = client(system, owner.apiKey);
    const v1 = `module.exports = { key: "my-key", name: "K", version: "1.0.0", async run() {} };`;
    const v2 = v1.replace('1.0.0', '2.0.0');
    await api.post('/components', { component_code: v1 });
    const second = await api.post('/components', { component_code: v2 });
    expect((await api.get('/components/my-key')).body.data).toMatchObject({ id: second.body.data.id, version: '2.0.0' });
    const o = client(system, other.apiKey);
    expect((await o.get('/components/my-key')).status).toBe(404);
    expect((await o.get(`/components/${second.body.data.id}`)).status).toBe(404);
    expect((await o.post(`/components/${second.body.data.id}/props/x/options`, {})).status).toBe(404);

    const inOrg = await api.post(`/components?org_id=${org.id}`, { component_code: v1.replace('my-key', 'org-key') });
    expect(inOrg.status).toBe(200);
    expect((await api.get('/components/org-key')).status).toBe(404);
    expect((await api.get(`/components/org-key?org_id=${org.id}`)).body.data.id).toBe(inOrg.body.data.id);
    expect((await api.get(`/components/${inOrg.body.data.id}`)).status).toBe(200);
    expect((await o.get(`/components/org-key?org_id=${org.id}`)).status).toBe(404);
    expect((await o.post(`/components?org_id=${org.id}`, { component_code: v1 })).status).toBe(404);
  });

  it('serves the shipped registry by key to every account; unknown keys are 404', async () => {
    const api = client(system, createUser(system).apiKey);
    for (const key of ['http-custom-response', 'schedule-interval', 'schedule-cron', 'rss-new-item-in-feed', 'http-request-counter']) {
      const res = await api.get(`/components/registry/${key}`);
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ key, version: expect.stringMatching(/^\d+\.\d+\.\d+$/), code_hash: sha256(res.body.data.code) });
      expect((await api.get(`/components/${res.body.data.id}`)).status).toBe(200);
    }
    const missing = await api.get('/components/registry/no-such-key');
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('not_found');
  });
});
