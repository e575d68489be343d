import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxPool } from './pool';

describe('SandboxPool.describe', () => {
  let pool: SandboxPool;
  beforeAll(() => {
    pool = new SandboxPool({ threads: 1, heapMb: 64, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-')) });
  });
  afterAll(() => pool.close());

  it('reads props, app props, propDefinitions, methods and hooks of an ESM component', async () => {
    const code = `
      const app = {
        type: 'app', app: 'github',
        propDefinitions: {
          repo: { type: 'string', label: 'Repo', async options({ page }) { return ['a', 'b'] } },
        },
        methods: { _base() { return 'x' } },
      };
      export default {
        name: 'New thing', key: 'github-new-thing', version: '0.0.1', type: 'source', dedupe: 'unique',
        description: 'Emits',
        props: {
          github: app,
          db: '$.service.db',
          http: { type: '$.interface.http', customResponse: true },
          timer: { type: '$.interface.timer', default: { intervalSeconds: 60 } },
          repo: { propDefinition: [app, 'repo', (c) => ({ org: c.org })], optional: true },
          level: { type: 'string', options: ['a', { label: 'B', value: 'b' }], reloadProps: true, fn() {} },
          n: { type: 'integer', min: 1, max: 5 },
        },
        hooks: { async deploy() {}, activate() {} },
        methods: { helper() {} },
        async run() {},
      };`;
    const r = await pool.describe(code, { timeoutMs: 10000 });
    expect(r.error).toBeUndefined();
    const d = r.descriptor!;
    expect(d).toMatchObject({ name: 'New thing', key: 'github-new-thing', version: '0.0.1', type: 'source', dedupe: 'unique', hasRun: true, format: 'esm' });
    expect(d.methods).toEqual(['helper']);
    expect(d.hooks).toEqual(['deploy', 'activate']);
    const props = Object.fromEntries(d.props.map((p) => [p.name, p]));
    expect(props.github).toMatchObject({ type: 'app', app: 'github', methods: ['_base'] });
    expect(props.github.propDefinitions?.repo).toMatchObject({ type: 'string', label: 'Repo', options: { $fn: true, async: true } });
    expect(props.db).toEqual({ name: 'db', type: '$.service.db' });
    expect(props.http).toMatchObject({ type: '$.interface.http', customResponse: true });
    expect(props.timer).toMatchObject({ type: '$.interface.timer', default: { intervalSeconds: 60 } });
    expect(props.repo).toMatchObject({ type: 'string', label: 'Repo', optional: true, propDefinition: ['github', 'repo', { $fn: true, async: false }] });
    expect(props.level).toMatchObject({ options: ['a', { label: 'B', value: 'b' }], extra: { reloadProps: true, fn: { $fn: true, async: false } } });
    expect(props.n).toMatchObject({ type: 'integer', min: 1, max: 5 });
  });

  it('names the app slug in a propDefinition whose app is not one of the props, and keeps alert props', async () => {
    const code = `
      const slack = { type: 'app', app: 'slack', propDefinitions: { channel: { type: 'string', label: 'Channel', description: 'Where' } } };
      module.exports = {
        name: 'x', version: '1',
        props: {
          channel: { propDefinition: [slack, 'channel', { types: ['public'] }], label: 'Override' },
          note: { type: 'alert', alertType: 'info', content: 'Read me' },
          tags: { type: 'string[]', optional: true, default: ['a'] },
          secretKey: { type: 'string', secret: true },
          looseSecret: { type: 'string', secret: 1, optional: 'yes' },
          notSecret: { type: 'string', secret: 0, optional: '' },
        },
        run() {},
      };`;
    const r = await pool.describe(code, { timeoutMs: 10000 });
    expect(r.error).toBeUndefined();
    const props = Object.fromEntries(r.descriptor!.props.map((p) => [p.name, p]));
    expect(props.channel).toEqual({ name: 'channel', type: 'string', label: 'Override', description: 'Where', propDefinition: ['slack', 'channel', { types: ['public'] }] });
    expect(props.note).toEqual({ name: 'note', type: 'alert', extra: { alertType: 'info', content: 'Read me' } });
    expect(props.tags).toEqual({ name: 'tags', type: 'string[]', optional: true, default: ['a'] });
    expect(props.secretKey).toEqual({ name: 'secretKey', type: 'string', secret: true });
    // Not booleans, read as JavaScript reads them: a value declared `secret: 1` is hidden.
    expect(props.looseSecret).toEqual({ name: 'looseSecret', type: 'string', secret: true, optional: true });
    expect(props.notSecret).toEqual({ name: 'notSecret', type: 'string', secret: false, optional: false });
    expect(r.descriptor).toMatchObject({ format: 'cjs', hasRun: true, hooks: [], methods: [], dependencies: [] });
  });

  it("resolves a propDefinition that names its app by the app prop's name or the app's slug", async () => {
    const code = `
      const gh = { type: 'app', app: 'github', propDefinitions: { repo: { type: 'string', label: 'Repo', description: 'Pick one' } } };
      module.exports = {
        name: 'x', version: '1',
        props: {
          github_app: gh,
          byName: { propDefinition: ['github_app', 'repo'], label: 'Override' },
          bySlug: { propDefinition: ['github', 'repo', { org: 'o' }] },
        },
        run() {},
      };`;
    const r = await pool.describe(code, { timeoutMs: 10000 });
    expect(r.error).toBeUndefined();
    const props = Object.fromEntries(r.descriptor!.props.map((p) => [p.name, p]));
    expect(props.byName).toEqual({ name: 'byName', type: 'string', label: 'Override', description: 'Pick one', propDefinition: ['github_app', 'repo'] });
    expect(props.bySlug).toEqual({ name: 'bySlug', type: 'string', label: 'Repo', description: 'Pick one', propDefinition: ['github_app', 'repo', { org: 'o' }] });
  });

  it('returns an error for code that throws on load', async () => {
    const r = await pool.describe(`throw new TypeError('boom at load')`, { timeoutMs: 5000 });
    expect(r.descriptor).toBeUndefined();
    expect(r.error).toMatchObject({ name: 'TypeError', message: 'boom at load' });
  });

  it('returns an error for code that does not parse', async () => {
    const r = await pool.describe(`module.exports = {`, { timeoutMs: 5000 });
    expect(r.error?.name).toBe('BundleError');
  });
});
