import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxPool } from './pool';
import { task } from './test-support/components';
import type { HttpResponsePayload } from './types';

describe('SandboxPool.execute', () => {
  let pool: SandboxPool;
  beforeAll(() => {
    pool = new SandboxPool({ threads: 2, heapMb: 64, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-')) });
  });
  afterAll(() => pool.close());

  it('runs a CommonJS source with props, defaults, methods, db and emits', async () => {
    const code = `
      module.exports = {
        name: 'cjs', version: '0.1.0',
        props: { db: '$.service.db', greeting: { type: 'string', default: 'hi' }, count: { type: 'integer' } },
        methods: { twice(n) { return n * 2 } },
        async run(event) {
          const { twice } = this;
          const n = (this.db.get('n') ?? 0) + 1;
          this.db.set('n', n);
          this.db.set('gone', undefined);
          this.$emit({ greeting: this.greeting, n: twice(n), count: this.count, event, missing: this.db.get('nope') },
            { id: 'e' + n, summary: 's', ts: 1700000000, delivery_ts: 5 });
        },
      };`;
    const r = await pool.execute(task(code, { props: { count: 3 }, db: { n: 4, gone: 1 } }));
    expect(r.error).toBeUndefined();
    expect(r.emits).toEqual([
      { event: { greeting: 'hi', n: 10, count: 3, event: { hello: 'world' } }, meta: { id: 'e5', summary: 's', ts: 1700000000000, delivery_ts: 5 } },
    ]);
    expect(r.dbWrites).toEqual({ n: 5, gone: undefined });
    expect('gone' in r.dbWrites).toBe(true);
  });

  it('returns a db write to the key __proto__ as an own key, not as the change set\'s prototype', async () => {
    const code = `module.exports = { name: 'p', version: '1', props: { db: '$.service.db' }, async run() { this.db.set('__proto__', { polluted: true }); } };`;
    const r = await pool.execute(task(code));
    expect((r.dbWrites as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.getOwnPropertyDescriptor(r.dbWrites, '__proto__')?.value).toEqual({ polluted: true });
  });

  it('runs ESM sources (export default and export { x as default }) with spread props', async () => {
    const a = `const common = { props: { x: { type: 'string' } } };
      const c = { name: 'esm', version: '1', props: { ...common.props }, run() { this.$emit({ x: this.x }) } };
      export { c as default };`;
    const b = `export default { name: 'esm2', version: '1', props: {}, run(e) { this.$emit(e, { name: 'chan' }) } };`;
    const ra = await pool.execute(task(a, { props: { x: 'y' } }));
    const rb = await pool.execute(task(b));
    expect(ra).toMatchObject({ emits: [{ event: { x: 'y' }, meta: {} }] });
    expect(rb).toMatchObject({ emits: [{ event: { hello: 'world' }, meta: { name: 'chan' } }] });
  });

  it('binds component and app methods (detached calls) and gives apps $auth', async () => {
    const code = `
      const app = {
        type: 'app', app: 'acme',
        methods: {
          _token() { return this.$auth.oauth_access_token },
          headers() { return { Authorization: 'Bearer ' + this._token() } },
        },
      };
      module.exports = {
        name: 'apps', version: '1',
        props: { acme: app },
        methods: { h() { const { headers } = this.acme; return headers() }, outer() { const { h } = this; return h() } },
        run() { const { outer, $emit } = this; $emit({ h: outer(), slug: this.acme.app }) },
      };`;
    const r = await pool.execute(task(code, { props: { acme: { $auth: { oauth_access_token: 'tok' } } } }));
    expect(r.error).toBeUndefined();
    expect(r.emits[0].event).toEqual({ h: { Authorization: 'Bearer tok' }, slug: 'acme' });
  });

  it('runs a component written with the global defineComponent of Pipedream\'s runtime', async () => {
    const code = `export default defineComponent({ name: 'dc', version: '1', props: { n: { type: 'integer', optional: true, default: 2 } }, run() { this.$emit({ n: this.n }) } });`;
    const d = await pool.describe(code, { timeoutMs: 10_000 });
    expect(d.descriptor).toMatchObject({ name: 'dc', hasRun: true });
    const r = await pool.execute(task(code));
    expect(r.error).toBeUndefined();
    expect(r.emits[0].event).toEqual({ n: 2 });
  });

  it('gives props declared by propDefinition the type and default of the app\'s definition', async () => {
    const code = `
      const app = { type: 'app', app: 'acme', propDefinitions: {
        max: { type: 'integer', optional: true, default: 7 },
        store: { type: '$.service.db' },
        hook: { type: '$.interface.http', customResponse: true },
      } };
      export default {
        name: 'inherited', version: '1',
        props: { app, max: { propDefinition: [app, 'max'] }, own: { propDefinition: [app, 'max'], default: 3 }, store: { propDefinition: [app, 'store'] }, hook: { propDefinition: [app, 'hook'] } },
        run() {
          this.store.set('k', this.store.get('k') + 1);
          this.hook.respond({ status: 204 });
          this.$emit({ max: this.max, own: this.own });
        },
      };`;
    const r = await pool.execute(task(code, { db: { k: 1 } }));
    expect(r.error).toBeUndefined();
    expect(r.emits[0].event).toEqual({ max: 7, own: 3 });
    expect(r.dbWrites).toEqual({ k: 2 });
    expect(r.response).toMatchObject({ status: 204 });
  });

  it('caps the db size and rejects values that are not JSON', async () => {
    const base = (body: string) => `module.exports = { name: 'db', version: '1', props: { db: '$.service.db' }, run() { ${body} } }`;
    const big = await pool.execute(task(base(`this.db.set('a', 'x'.repeat(600)); this.db.set('b', 'y'.repeat(600));`), { limits: { dbMaxBytes: 1024, eventMaxBytes: 1e6, emitsPerInvocation: 10 } }));
    expect(big.error).toMatchObject({ name: 'DbSizeLimitError', message: expect.stringContaining('limit is 1024 bytes') });
    expect(big.dbWrites).toEqual({ a: 'x'.repeat(600) });
    const existing = await pool.execute(task(base(`this.db.set('c', 'z'.repeat(100))`), { db: { a: 'x'.repeat(1000) }, limits: { dbMaxBytes: 1024, eventMaxBytes: 1e6, emitsPerInvocation: 10 } }));
    expect(existing.error?.name).toBe('DbSizeLimitError');
    const replace = await pool.execute(task(base(`this.db.set('a', 'small')`), { db: { a: 'x'.repeat(1000) }, limits: { dbMaxBytes: 1024, eventMaxBytes: 1e6, emitsPerInvocation: 10 } }));
    expect(replace.error).toBeUndefined();
    const bigint = await pool.execute(task(base(`this.db.set('k', { n: 10n })`)));
    expect(bigint.error).toMatchObject({ name: 'TypeError', message: expect.stringContaining('db.set("k"): the value is not JSON-serializable') });
    const fn = await pool.execute(task(base(`this.db.set('k', () => 1)`)));
    expect(fn.error?.message).toContain('not JSON-serializable');
  });

  it('caps emits per invocation and event size', async () => {
    const limits = { dbMaxBytes: 1e6, eventMaxBytes: 100, emitsPerInvocation: 3 };
    const many = await pool.execute(task(`module.exports = { name: 'e', version: '1', run() { for (let i = 0; i < 5; i++) this.$emit({ i }) } }`, { limits }));
    expect(many.error).toMatchObject({ name: 'EmitLimitError', message: expect.stringContaining('at most 3 emits') });
    expect(many.emits).toHaveLength(3);
    const large = await pool.execute(task(`module.exports = { name: 'e', version: '1', run() { this.$emit({ s: 'x'.repeat(200) }) } }`, { limits }));
    expect(large.error).toMatchObject({ name: 'EventSizeLimitError', message: expect.stringContaining('limit is 100 bytes') });
    expect(large.emits).toHaveLength(0);
    // The meta travels in the same message: a long summary counts against the same limit.
    const summary = await pool.execute(task(`module.exports = { name: 'e', version: '1', run() { this.$emit({ n: 1 }, { summary: 's'.repeat(200) }) } }`, { limits }));
    expect(summary.error).toMatchObject({ name: 'EventSizeLimitError', message: expect.stringContaining('with its meta (id, name, summary)') });
    expect(summary.emits).toHaveLength(0);
  });

  it('normalises ts from seconds, ISO strings and numeric strings', async () => {
    const code = `module.exports = { name: 't', version: '1', run() {
      this.$emit(1, { ts: '1700000000' }); this.$emit(2, { ts: '2023-11-14T22:13:20.000Z' }); this.$emit(3, { ts: 1700000000000 }); this.$emit(4, { ts: 'nonsense' });
    } }`;
    const r = await pool.execute(task(code));
    expect(r.emits.map((e) => e.meta.ts)).toEqual([1700000000000, 1700000000000, 1700000000000, undefined]);
  });

  it('captures console output as logs and thrown errors with a stack', async () => {
    const code = `module.exports = { name: 'l', version: '1', run() {
      console.log('a', 1, { b: 2 }); console.error(new Error('bad').message); console.warn('w'); console.info('i'); console.debug('d');
      throw new RangeError('it broke');
    } }`;
    const r = await pool.execute(task(code));
    expect(r.logs.map((l) => [l.k, l.msg])).toEqual([
      ['console.log', 'a 1 { b: 2 }'],
      ['console.error', 'bad'],
      ['console.warn', 'w'],
      ['console.info', 'i'],
      ['console.debug', 'd'],
    ]);
    expect(typeof r.logs[0].ts).toBe('number');
    expect(r.error).toMatchObject({ name: 'RangeError', message: 'it broke', stack: expect.stringContaining('it broke') });
    // Stack frames point at the component's own lines, not at the bundle.
    expect(r.error?.stack).toContain('component.js:3:');
    // The sandbox's own frames (its call machinery, vm, AsyncLocalStorage) are not the component's: left out.
    const frames = (r.error?.stack ?? '').split('\n').filter((l) => /^\s+at /.test(l));
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.filter((l) => !l.includes('component.js'))).toEqual([]);
  });

  it("runs workers with an empty environment but for Pipedream's PD_COMPONENT (the source's id)", async () => {
    const r = await pool.execute(task(`module.exports = { name: 'env', version: '1', run() { this.$emit({ keys: Object.keys(process.env) }) } }`));
    expect(r.emits[0].event).toEqual({ keys: ['PD_COMPONENT'] });
  });

  it('emits the triggering event unchanged for a source without run', async () => {
    const r = await pool.execute(task(`module.exports = { name: 'norun', version: '1', props: { timer: { type: '$.interface.timer' } } }`, { event: { timestamp: 1, interval_seconds: 60 } }));
    expect(r.error).toBeUndefined();
    expect(r.emits).toEqual([{ event: { timestamp: 1, interval_seconds: 60 }, meta: {} }]);
  });

  it('runs hooks with the same this', async () => {
    const code = `module.exports = { name: 'h', version: '1', props: { db: '$.service.db', http: '$.interface.http' },
      hooks: { async activate() { this.db.set('endpoint', this.http.endpoint) } }, run() {} }`;
    const r = await pool.execute(task(code, { method: 'activate', endpointUrl: 'http://x.test/e/abc' }));
    expect(r.error).toBeUndefined();
    expect(r.dbWrites).toEqual({ endpoint: 'http://x.test/e/abc' });
    const none = await pool.execute(task(code, { method: 'deploy' }));
    expect(none).toMatchObject({ emits: [], dbWrites: {} });
    expect(none.error).toBeUndefined();
  });

  it('validates respond(): customResponse required, status range, body encodings', async () => {
    const src = (custom: boolean, body: string) => `module.exports = { name: 'r', version: '1', props: { http: { type: '$.interface.http', customResponse: ${custom} } }, run() { ${body} } }`;
    const noCustom = await pool.execute(task(src(false, `this.http.respond({ status: 200 })`)));
    expect(noCustom.error?.message).toContain('requires customResponse: true');
    const badStatus = await pool.execute(task(src(true, `this.http.respond({ status: 700 })`)));
    expect(badStatus.error?.message).toContain('status must be an integer from 100 to 599');
    const buf = await pool.execute(task(src(true, `this.http.respond({ status: '202', headers: { 'x-a': 1 }, body: Buffer.from('hi') })`)));
    expect(buf.response).toEqual({ status: 202, headers: { 'x-a': '1' }, body: Buffer.from('hi').toString('base64'), bodyEncoding: 'base64' });
    const text = await pool.execute(task(src(true, `this.http.respond({ status: 200, body: 'ok' })`)));
    expect(text.response).toEqual({ status: 200, headers: {}, body: 'ok', bodyEncoding: 'utf8' });
    const badValue = await pool.execute(task(src(true, `this.http.respond({ status: 200, headers: { 'x-a': 'one\\r\\nset-cookie: x=1' } })`)));
    expect(badValue.error).toMatchObject({ name: 'TypeError', message: expect.stringContaining('respond(): invalid header "x-a"') });
    expect(badValue.response).toBeUndefined();
    const badName = await pool.execute(task(src(true, `this.http.respond({ status: 200, headers: { 'bad name': 'v' } })`)));
    expect(badName.error?.message).toContain('respond(): invalid header "bad name"');
  });

  it('refuses respond() headers over 100 lines or 8 KiB (counting the content-type it adds), as any invalid respond()', async () => {
    const src = (body: string) => `module.exports = { name: 'r', version: '1', props: { http: { type: '$.interface.http', customResponse: true } }, run() { ${body} } }`;
    const many = await pool.execute(task(src(`this.http.respond({ status: 200, headers: Object.fromEntries(Array.from({ length: 20000 }, (_, i) => ['x-h' + i, 'v'])) })`)));
    expect(many.error).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/^respond\(\): too many headers: 20000, at most 100 /) });
    expect(many.response).toBeUndefined();
    const big = await pool.execute(task(src(`this.http.respond({ status: 200, headers: { 'x-big': 'a'.repeat(900 * 1024) } })`)));
    expect(big.error).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/^respond\(\): headers too large: 921609 bytes, at most 8192 /) });
    const cookies = await pool.execute(task(src(`this.http.respond({ status: 200, headers: { 'set-cookie': Array.from({ length: 101 }, (_, i) => 'c' + i + '=1') } })`)));
    expect(cookies.error?.message).toMatch(/^respond\(\): too many headers: 101, at most 100 /);
    // 100 headers are taken; a JSON body's content-type would be the 101st.
    const hundred = `Object.fromEntries(Array.from({ length: 100 }, (_, i) => ['x-h' + i, 'v']))`;
    const atBound = await pool.execute(task(src(`this.http.respond({ status: 200, headers: ${hundred}, body: 'ok' })`)));
    expect(atBound.error).toBeUndefined();
    expect(Object.keys(atBound.response?.headers ?? {})).toHaveLength(100);
    const withJson = await pool.execute(task(src(`this.http.respond({ status: 200, headers: ${hundred}, body: { ok: true } })`)));
    expect(withJson.error?.message).toMatch(/^respond\(\): too many headers: 101, at most 100 /);
  });

  describe('respond() reaches the caller before run finishes', () => {
    let server: Server;
    let released = false;
    let url = '';
    beforeAll(async () => {
      server = createServer((req, res) => res.end(JSON.stringify({ released })));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    });
    afterAll(() => new Promise((r) => server.close(r)));

    it('delivers the response through onResponse while run is still waiting for it', async () => {
      // run responds, then waits until the test (in onResponse) releases it: the run can only finish if the response arrived early.
      const code = `module.exports = { name: 'early', version: '1', props: { http: { type: '$.interface.http', customResponse: true } },
        async run() {
          this.http.respond({ status: 200, body: { early: true } });
          for (;;) { const r = await (await fetch(${JSON.stringify(url)})).json(); if (r.released) break; await new Promise((ok) => setTimeout(ok, 10)); }
          this.$emit({ finished: true });
        } }`;
      const seen: HttpResponsePayload[] = [];
      const r = await pool.execute(task(code, { timeoutMs: 20_000 }), {
        onResponse: (resp) => {
          seen.push(resp);
          released = true;
        },
      });
      expect(r.error).toBeUndefined();
      expect(seen).toEqual([{ status: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, body: '{"early":true}', bodyEncoding: 'utf8' }]);
      expect(r.emits).toEqual([{ event: { finished: true }, meta: {} }]);
    });
  });

  it('runs actions with $: return value, exports, sends, respond and flow.exit', async () => {
    const code = `export default { name: 'act', version: '1', type: 'action', props: { n: { type: 'integer' } },
      async run({ $ }) {
        $.export('$summary', 'did it'); $.export('n', this.n); $.send.http({ method: 'POST', url: 'https://x.test' });
        $.respond({ status: 201, body: 'made' });
        return { double: this.n * 2 };
      } }`;
    const r = await pool.execute(task(code, { props: { n: 4 } }));
    expect(r.error).toBeUndefined();
    expect(r.returnValue).toEqual({ double: 8 });
    expect(r.exports).toEqual({ $summary: 'did it', n: 4 });
    expect(r.sends).toEqual([{ kind: 'http', payload: { method: 'POST', url: 'https://x.test' } }]);
    expect(r.response).toMatchObject({ status: 201, body: 'made' });
    const exit = await pool.execute(task(`export default { name: 'a', version: '1', type: 'action', run({ $ }) { $.export('x', 1); $.flow.exit('nothing to do'); return 5 } }`));
    expect(exit.error).toBeUndefined();
    expect(exit).toMatchObject({ exit: { reason: 'nothing to do' }, exports: { x: 1 } });
    expect(exit.returnValue).toBeUndefined();
  });

  it('reports pool figures for metrics', async () => {
    const s = pool.stats();
    expect(s.threads).toBe(2);
    expect(s.completed).toBeGreaterThan(0);
    expect(s.queueSize).toBe(0);
  });

  it('reports a module that exports nothing usable, and code that throws on load', async () => {
    const r1 = await pool.execute(task(`module.exports = 5`));
    expect(r1.error?.message).toContain('must export an object');
    const r2 = await pool.execute(task(`throw new Error('load fail')`));
    expect(r2.error).toMatchObject({ name: 'Error', message: 'load fail' });
  });
});

describe('SandboxPool with several concurrent tasks per worker', () => {
  let pool: SandboxPool;
  beforeAll(() => {
    pool = new SandboxPool({ threads: 1, concurrentTasksPerWorker: 4, heapMb: 64, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-')) });
  });
  afterAll(() => pool.close());

  it('keeps each invocation’s logs, emits and db writes apart while they interleave', async () => {
    const code = `module.exports = { name: 'io', version: '1', props: { db: '$.service.db' }, async run(e) {
      console.log('start', e.n);
      await new Promise((r) => setTimeout(r, 50 * (4 - e.n)));
      console.log('end', e.n);
      this.db.set('n', e.n);
      this.$emit({ n: e.n });
    } }`;
    const results = await Promise.all([0, 1, 2, 3].map((n) => pool.execute(task(code, { event: { n } }))));
    results.forEach((r, n) => {
      expect(r.error).toBeUndefined();
      expect(r.logs.map((l) => l.msg)).toEqual([`start ${n}`, `end ${n}`]);
      expect(r.emits).toEqual([{ event: { n }, meta: {} }]);
      expect(r.dbWrites).toEqual({ n });
    });
  });
});
