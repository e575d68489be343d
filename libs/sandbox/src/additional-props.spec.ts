import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxPool } from './pool';

const code = `
  const app = {
    type: 'app', app: 'acme',
    propDefinitions: { board: { type: 'string', label: 'Board', async options() { return ['b1']; } } },
    methods: { user() { return this.$auth.user; } },
  };
  module.exports = {
    name: 'dyn', version: '1',
    props: { acme: app, mode: { type: 'string', options: ['a', 'b'], reloadProps: true }, db: '$.service.db' },
    methods: { suffix() { return '-' + this.mode; } },
    async additionalProps(previousPropDefs) {
      if (this.mode === 'loop') for (;;) {}
      if (this.mode === 'side') { this.db.set('k', 1); }
      return {
        ...previousPropDefs,
        ['field' + this.suffix()]: { type: 'string', label: this.acme.user(), default: 'x' },
        board: { propDefinition: [app, 'board'], optional: true },
        seen: { type: 'string[]', options: Object.keys(previousPropDefs) },
        pick: { type: 'string', options: async ({ page }) => [this.mode + ':' + page] },
      };
    },
    run() {},
  };`;

describe('SandboxPool.additionalProps', () => {
  let pool: SandboxPool;
  beforeAll(() => {
    pool = new SandboxPool({ threads: 1, heapMb: 64, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-')) });
  });
  afterAll(() => pool.close());

  it('calls additionalProps() with the static values as this and describes what it adds', async () => {
    const out = await pool.additionalProps(code, { acme: { $auth: { user: 'ann' } }, mode: 'a' }, 10_000);
    expect(out.error).toBeUndefined();
    expect(out.props).toEqual([
      { name: 'field-a', type: 'string', label: 'ann', default: 'x' },
      { name: 'board', type: 'string', label: 'Board', optional: true, options: { $fn: true, async: true }, propDefinition: ['acme', 'board', undefined] },
      { name: 'seen', type: 'string[]', options: ['acme', 'mode', 'db'] },
      { name: 'pick', type: 'string', options: { $fn: true, async: true } },
    ]);
  });

  it('lists the options of props that additionalProps() adds for the values given', async () => {
    const values = { acme: { $auth: { user: 'ann' } }, mode: 'b' };
    expect(await pool.options(code, 'pick', { page: 2, configuredProps: values }, 5000)).toEqual({ options: ['b:2'] });
    expect(await pool.options(code, 'board', { configuredProps: values }, 5000)).toEqual({ options: ['b1'] });
    expect((await pool.options(code, 'nope', { configuredProps: values }, 5000)).error?.message).toBe('the component has no prop "nope"');
  });

  it('passes the props it added last time after the static ones in previousPropDefs, and keeps the loaded definitions as written', async () => {
    // Registry components keep what they added before ({ ...previousPropDefs }) and edit definitions in place.
    const columns = `module.exports = {
      name: 'columns', version: '1',
      props: { column: { type: 'string', options: ['a', 'b'], reloadProps: true } },
      async additionalProps(previousPropDefs) {
        const seen = Object.keys(previousPropDefs).join(',') + (previousPropDefs.column.hidden ? ' (hidden)' : '');
        previousPropDefs.column.hidden = true;
        const props = {};
        for (const [name, def] of Object.entries(previousPropDefs)) if (name.startsWith('col_')) props[name] = def;
        props['col_' + this.column] = { type: 'string', label: 'Column ' + this.column, optional: true };
        props.seen = { type: 'string', optional: true, default: seen };
        return props;
      },
      run() {},
    };`;
    const first = await pool.additionalProps(columns, { column: 'a' }, 10_000);
    expect(first.props).toEqual([
      { name: 'col_a', type: 'string', label: 'Column a', optional: true },
      { name: 'seen', type: 'string', optional: true, default: 'column' },
    ]);
    const previous = [
      { name: 'col_a', type: 'string', label: 'Column a', optional: true },
      { name: 'col_r', type: 'string', remoteOptions: true, reloadProps: true },
      { name: 'column', type: 'integer' },
    ];
    const second = await pool.additionalProps(columns, { column: 'b' }, 10_000, undefined, previous);
    expect(second.props).toEqual([
      { name: 'col_a', type: 'string', label: 'Column a', optional: true },
      // Its options method was not stored: it comes back with its JSON fields only.
      { name: 'col_r', type: 'string', extra: { reloadProps: true } },
      { name: 'col_b', type: 'string', label: 'Column b', optional: true },
      // A stored prop named like a static one does not replace it; the edit of the first call did not stay.
      { name: 'seen', type: 'string', optional: true, default: 'column,col_a,col_r' },
    ]);
  });

  it('reports a component that loops or writes state while being configured', async () => {
    expect((await pool.additionalProps(code, { acme: { $auth: {} }, mode: 'loop' }, 1000)).error?.message).toMatch(/timed out|terminated/);
    const side = await pool.additionalProps(code, { acme: { $auth: {} }, mode: 'side' }, 5000);
    // Configuring a source has no side effects: the db is closed.
    expect(side.error?.message).toBe('db.set() was called after the invocation finished');
    // A component without additionalProps() adds nothing.
    expect(await pool.additionalProps('module.exports = { name: "s", version: "1", props: {}, run() {} };', {}, 5000)).toEqual({ props: [] });
  });

  it('refuses an answer too large to leave the sandbox, and cuts long error messages', async () => {
    const returning = (body: string) => `module.exports = { name: "big", version: "1", props: {}, async additionalProps() { ${body} }, async options() { ${body} }, run() {} };`;
    const failure = async (body: string) => (await pool.additionalProps(returning(body), {}, 5000)).error?.message;
    expect(await failure('return Object.fromEntries(Array.from({ length: 201 }, (_, i) => ["p" + i, { type: "string" }]));')).toBe('it returned 201 props; at most 200 may be added');
    expect(await failure('return { x: { type: "string", description: "x".repeat(300000) } };')).toMatch(/^the props it returned are \d+ bytes of JSON; at most 262144 may be added$/);
    expect(await failure('let d = {}; const r = d; for (let i = 0; i < 150; i++) d = d.a = {}; return { x: { type: "object", default: r } };')).toBe('a value is nested deeper than 100 levels');
    expect(await failure('throw new Error("e".repeat(100000));')).toBe(`${'e'.repeat(2000)}…`);
    expect(await failure('throw { get message() { throw new Error("no"); } };')).toBe('it threw a value that cannot be read');
    // An own "__proto__" key never leaves the sandbox as a prototype or as data.
    const proto = await pool.additionalProps(returning('return { x: JSON.parse(\'{"type": "object", "default": {"__proto__": {"polluted": 1}, "ok": 1}, "__proto__": {"secret": true}}\') };'), {}, 5000);
    expect(proto).toEqual({ props: [{ name: 'x', type: 'object', default: { ok: 1 } }] });
    // options() answers are bounded the same way.
    const options = await pool.options(`module.exports = { name: "o", version: "1", props: { p: { type: "string", async options() { return Array.from({ length: 20000 }, () => "o".repeat(100)); } } }, run() {} };`, 'p', { configuredProps: {} }, 5000);
    expect(options.error?.message).toMatch(/^it returned \d+ bytes of JSON; at most 1048576 may be returned$/);
  });
});
