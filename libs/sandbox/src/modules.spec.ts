import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { SandboxPool } from './pool';
import { task } from './test-support/components';

/** Real Pipedream-style multi-file component: entry imports its app file and a shared common module. */
const FILES: Record<string, string> = {
  '/components/acme/acme.app.mjs': `
    import get from 'lodash/get.js';
    export default {
      type: 'app', app: 'acme',
      propDefinitions: { channel: { type: 'string', label: 'Channel', async options({ page }) { return ['c' + page] } } },
      methods: { token() { return get(this, '$auth.api_key') } },
    };`,
  '/components/acme/sources/common/base.mjs': `
    import acme from '../../acme.app.mjs';
    export default { props: { acme, db: '$.service.db' }, methods: { prefix() { return 'acme:' } } };`,
  '/components/acme/sources/new-item/new-item.mjs': `
    import common from '../common/base.mjs';
    export default {
      ...common,
      name: 'New Item', key: 'acme-new-item', version: '0.0.1', type: 'source',
      props: { ...common.props, channel: { propDefinition: [common.props.acme, 'channel'] } },
      methods: { ...common.methods },
      run() { this.$emit({ v: this.prefix() + this.acme.token(), channel: this.channel }) },
    };`,
  '/cjs/src/index.js': `
    const helper = require('./lib/helper');
    const data = require('../data.json');
    module.exports = { name: 'cjs multi', version: '1', run() { this.$emit({ h: helper(2), data }) } };`,
  '/cjs/src/lib/helper.js': `module.exports = (n) => n * 21;`,
  '/cjs/data.json': `{ "answer": 42 }`,
  '/cjs/src/lib/boom.js': `// fails on load
    throw new Error('boom at load');`,
  '/ts/source.ts': `
    import { double } from './helper';
    interface Out { n: number }
    export default { name: 'ts source', version: '1', props: { n: { type: 'integer' } }, run(this: { n: number; $emit(e: Out): void }) { this.$emit({ n: double(this.n) }) } };`,
  '/ts/helper.ts': `export const double = (n: number): number => n * 2;`,
};

describe('SandboxPool module formats and npm dependencies', () => {
  let pool: SandboxPool;
  let server: Server;
  let base = '';
  let npmCacheDir = '';
  const requested: string[] = [];

  beforeAll(async () => {
    npmCacheDir = mkdtempSync(join(tmpdir(), 'ess-sbx-npm-'));
    pool = new SandboxPool({ threads: 1, heapMb: 128, npmCacheDir });
    server = createServer((req, res) => {
      requested.push(req.url ?? '');
      const body = FILES[req.url ?? ''];
      if (req.url === '/api/items') {
        res.setHeader('content-type', 'application/json');
        return res.end(JSON.stringify({ items: [{ id: 3, title: 'c' }, { id: 2, title: 'b' }, { id: 1, title: 'a' }] }));
      }
      if (body === undefined) {
        res.statusCode = 404;
        return res.end('not found');
      }
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await pool.close();
    await new Promise((r) => server.close(r));
  });

  it('reads and runs a multi-file ESM component from its URL (relative imports fetched)', async () => {
    const url = `${base}/components/acme/sources/new-item/new-item.mjs`;
    const d = await pool.describe(FILES['/components/acme/sources/new-item/new-item.mjs'], { baseUrl: url, timeoutMs: 120_000 });
    expect(d.error).toBeUndefined();
    expect(d.descriptor).toMatchObject({ name: 'New Item', key: 'acme-new-item', format: 'esm', dependencies: ['lodash/get.js'], methods: ['prefix'] });
    const channel = d.descriptor!.props.find((p) => p.name === 'channel');
    expect(channel).toMatchObject({ type: 'string', label: 'Channel', propDefinition: ['acme', 'channel', undefined] });
    expect(d.dependencyVersions).toEqual({ lodash: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    expect(typeof d.bundle).toBe('string');
    // The bundle runs without the network.
    const r = await pool.execute(task(d.bundle!, { props: { acme: { $auth: { api_key: 'k1' } }, channel: 'general' }, dependencyVersions: d.dependencyVersions }));
    expect(r.error).toBeUndefined();
    expect(r.emits[0].event).toEqual({ v: 'acme:k1', channel: 'general' });
    const o = await pool.options(d.bundle!, 'channel', { page: 3 }, 10_000);
    expect(o).toEqual({ options: ['c3'] });
  });

  it('reads a CommonJS component with extension-less requires and JSON from its URL', async () => {
    const d = await pool.describe(FILES['/cjs/src/index.js'], { baseUrl: `${base}/cjs/src/index.js`, timeoutMs: 30_000 });
    expect(d.error).toBeUndefined();
    expect(d.descriptor).toMatchObject({ name: 'cjs multi', format: 'cjs', dependencies: [] });
    const r = await pool.execute(task(d.bundle!));
    expect(r.emits[0].event).toEqual({ h: 42, data: { answer: 42 } });
    // A module that throws while loading is reported at its URL and line.
    const bad = await pool.describe(`require('./lib/boom'); module.exports = {}`, { baseUrl: `${base}/cjs/src/index.js`, timeoutMs: 30_000 });
    expect(bad.error).toMatchObject({ message: 'boom at load' });
    expect(bad.error?.stack).toContain(`${base}/cjs/src/lib/boom.js:2:`);
  });

  it('reads TypeScript components: by the URL extension, and pasted code that only parses as TypeScript', async () => {
    const d = await pool.describe(FILES['/ts/source.ts'], { baseUrl: `${base}/ts/source.ts`, timeoutMs: 30_000 });
    expect(d.error).toBeUndefined();
    const r = await pool.execute(task(d.bundle!, { props: { n: 21 } }));
    expect(r.emits[0].event).toEqual({ n: 42 });
    const pasted = `const n: number = 5; type T = { n: number }; export default { name: 'ts', version: '1', run() { const t: T = { n }; this.$emit(t) } };`;
    const p = await pool.execute(task(pasted));
    expect(p.error).toBeUndefined();
    expect(p.emits[0].event).toEqual({ n: 5 });
    const broken = await pool.describe(`export default { name: 'x' ,, }`, { timeoutMs: 5000 });
    expect(broken.error).toMatchObject({ name: 'BundleError', message: expect.stringContaining('line 1:') });
  });

  it('explains a relative import without a URL, and a missing module', async () => {
    const noUrl = await pool.describe(`import x from './x.mjs'; export default x`, { timeoutMs: 5000 });
    expect(noUrl.error).toMatchObject({ name: 'BundleError', message: expect.stringContaining('relative imports need the component') });
    const missing = await pool.describe(`import x from './nope'; export default x`, { baseUrl: `${base}/cjs/src/index.js`, timeoutMs: 5000 });
    expect(missing.error?.message).toContain('not found (404)');
  });

  it('runs a component that arrives as one esbuild bundle with npm imports external', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ess-sbx-src-'));
    for (const [p, text] of Object.entries(FILES)) {
      mkdirSync(join(dir, p, '..'), { recursive: true });
      writeFileSync(join(dir, p), text);
    }
    const out = await build({ entryPoints: [join(dir, 'components/acme/sources/new-item/new-item.mjs')], bundle: true, format: 'esm', platform: 'node', packages: 'external', write: false });
    const code = out.outputFiles[0].text;
    const r = await pool.execute(task(code, { props: { acme: { $auth: { api_key: 'k2' } }, channel: 'x' } }));
    expect(r.error).toBeUndefined();
    expect(r.emits[0].event).toEqual({ v: 'acme:k2', channel: 'x' });
  });

  it('installs pinned and unpinned packages, subpaths, builtins and @pipedream/platform', async () => {
    const pinned = `
      const isNumber = require('is-number@6.0.0');
      const version = require('is-number@6.0.0/package.json').version;
      const crypto = require('crypto');
      const { createHash } = require('node:crypto');
      module.exports = { name: 'pinned', version: '1', run() {
        this.$emit({ version, yes: isNumber('5'), hash: createHash('md5').update('a').digest('hex'), same: crypto.createHash === createHash });
      } };`;
    const unpinned = `
      import isNumber from 'is-number';
      import { axios } from '@pipedream/platform';
      import pkg from 'is-number/package.json';
      export default { name: 'unpinned', version: '1', run() { this.$emit({ version: pkg.version, no: isNumber('x'), axios: typeof axios }) } };`;
    const [d1, d2] = await Promise.all([pool.describe(pinned, { timeoutMs: 120_000 }), pool.describe(unpinned, { timeoutMs: 120_000 })]);
    expect(d1.error).toBeUndefined();
    expect(d2.error).toBeUndefined();
    expect(d1.descriptor!.dependencies).toEqual(['is-number@6.0.0', 'is-number@6.0.0/package.json']);
    expect(d1.dependencyVersions).toEqual({ 'is-number': '6.0.0' });
    expect(d2.descriptor!.dependencies).toEqual(['@pipedream/platform', 'is-number', 'is-number/package.json']);
    const newest = d2.dependencyVersions!['is-number'];
    expect(newest).toMatch(/^\d+\.\d+\.\d+$/);
    expect(newest).not.toBe('6.0.0');
    const r1 = await pool.execute(task(pinned));
    expect(r1.error).toBeUndefined();
    expect(r1.emits[0].event).toEqual({ version: '6.0.0', yes: true, hash: '0cc175b9c0f1b6a831c399e269772661', same: true });
    const r2 = await pool.execute(task(unpinned, { dependencyVersions: d2.dependencyVersions }));
    expect(r2.error).toBeUndefined();
    expect(r2.emits[0].event).toEqual({ version: newest, no: false, axios: 'function' });
    // Each dependency set was installed once; the exact-version set of the unpinned one is a link to it.
    const dirs = readdirSync(npmCacheDir).filter((n) => /^[0-9a-f]{32}$/.test(n));
    expect(dirs.length).toBeGreaterThanOrEqual(3);
    for (const d of dirs) expect(existsSync(join(npmCacheDir, d, '.ess-installed.json'))).toBe(true);
  });

  it('runs a polling source that calls an API with axios from @pipedream/platform and keeps a cursor in db', async () => {
    const code = `
      import { axios } from '@pipedream/platform';
      export default {
        name: 'poll', version: '1', dedupe: 'greatest',
        props: { db: '$.service.db', timer: { type: '$.interface.timer', default: { intervalSeconds: 60 } }, apiUrl: { type: 'string' } },
        methods: { _last() { return this.db.get('last') ?? 0 } },
        async run() {
          const { items } = await axios(this, { url: this.apiUrl });
          const last = this._last();
          const fresh = items.filter((i) => i.id > last).sort((a, b) => a.id - b.id);
          for (const item of fresh) this.$emit(item, { id: item.id, summary: item.title });
          if (fresh.length) this.db.set('last', fresh[fresh.length - 1].id);
        },
      };`;
    const r = await pool.execute(task(code, { props: { apiUrl: `${base}/api/items` }, db: { last: 1 } }));
    expect(r.error).toBeUndefined();
    expect(r.emits).toEqual([
      { event: { id: 2, title: 'b' }, meta: { id: 2, summary: 'b' } },
      { event: { id: 3, title: 'c' }, meta: { id: 3, summary: 'c' } },
    ]);
    expect(r.dbWrites).toEqual({ last: 3 });
  });

  it('answers describe within its timeout even while dependencies are still installing', async () => {
    const fresh = new SandboxPool({ threads: 1, heapMb: 64, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-npm-')) });
    try {
      const d = await fresh.describe(`import isOdd from 'is-odd@3.0.1'; export default { name: 'odd', version: '1', run() {} }`, { timeoutMs: 30 });
      expect(d.error).toMatchObject({ name: 'TimeoutError', message: expect.stringContaining('installing its dependencies') });
    } finally {
      await fresh.close();
    }
  });

  it('uses the fetchText given to describe for relative imports (undefined = not found)', async () => {
    const seen: string[] = [];
    const fetchText = async (url: string) => {
      seen.push(url);
      return url.endsWith('/lib/util.js') ? 'module.exports = { x: 7 }' : undefined;
    };
    const d = await pool.describe(`const { x } = require('./lib/util'); module.exports = { name: 'f', version: '1', props: {}, run() { this.$emit(x) } }`, {
      baseUrl: 'https://example.test/c/entry.js',
      timeoutMs: 10_000,
      fetchText,
    });
    expect(d.error).toBeUndefined();
    expect(seen).toEqual(['https://example.test/c/lib/util', 'https://example.test/c/lib/util.js']);
    const r = await pool.execute(task(d.bundle!));
    expect(r.emits[0].event).toBe(7);
  });

  it('reports a dependency that cannot be installed', async () => {
    const r = await pool.execute(task(`const x = require('ess-no-such-package-zz9@1.0.0'); module.exports = { name: 'x', version: '1', run() {} }`, { timeoutMs: 120_000 }));
    expect(r.error).toMatchObject({ name: 'DependencyInstallError', message: expect.stringContaining('npm install failed') });
  });
});
