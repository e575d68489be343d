import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxPool } from './pool';

const code = `
  const app = {
    type: 'app', app: 'acme',
    propDefinitions: {
      board: {
        type: 'string',
        async options({ page, prevContext, orgId }) {
          return { options: [{ label: this.$auth.user + '/' + orgId + '/' + page, value: 'b' + page }], context: { nextPageToken: (prevContext.nextPageToken ?? 0) + 1 } };
        },
      },
    },
    methods: { user() { return this.$auth.user } },
  };
  module.exports = {
    name: 'opts', version: '1',
    props: {
      acme: app,
      org: { type: 'string' },
      board: { propDefinition: [app, 'board', (c) => ({ orgId: c.org })] },
      boardByName: { propDefinition: ['acme', 'board', { orgId: 'named' }] },
      color: { type: 'string', options: ['red', 'blue'] },
      item: { type: 'string', async options({ page }) { return [this.org + ':' + page, this.acme.user()] } },
      plain: { type: 'string' },
      odd: { type: 'string', async options() { return [{ label: 'A', value: 'a', extra: () => 1, when: new Date(0) }] } },
      slow: { type: 'string', options() { for (;;) {} } },
    },
    run() {},
  };`;

describe('SandboxPool.options', () => {
  let pool: SandboxPool;
  beforeAll(() => {
    pool = new SandboxPool({ threads: 1, heapMb: 64, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-')) });
  });
  afterAll(() => pool.close());

  const configuredProps = { acme: { $auth: { user: 'ann' } }, org: 'o1' };

  it("calls a prop's own async options with the component's this", async () => {
    expect(await pool.options(code, 'item', { page: 2, configuredProps }, 5000)).toEqual({ options: ['o1:2', 'ann'] });
  });

  it("calls an app propDefinition's options with the app as this, inputValues from the configured props, and the context", async () => {
    const r = await pool.options(code, 'board', { page: 1, prevContext: { nextPageToken: 4 }, configuredProps }, 5000);
    expect(r).toEqual({ options: [{ label: 'ann/o1/1', value: 'b1' }], context: { nextPageToken: 5 } });
  });

  it("calls the options of a propDefinition that names its app by the app prop's name", async () => {
    const r = await pool.options(code, 'boardByName', { page: 0, configuredProps }, 5000);
    expect(r).toEqual({ options: [{ label: 'ann/named/0', value: 'b0' }], context: { nextPageToken: 1 } });
  });

  it('returns static options, and clear errors for props without options or unknown props', async () => {
    expect(await pool.options(code, 'color', {}, 5000)).toEqual({ options: ['red', 'blue'] });
    expect((await pool.options(code, 'plain', {}, 5000)).error?.message).toContain('prop "plain" has no options');
    expect((await pool.options(code, 'nope', {}, 5000)).error?.message).toContain('no prop "nope"');
  });

  it('returns options that are not plain JSON as JSON: a function left out of an object, a Date as its string', async () => {
    expect(await pool.options(code, 'odd', {}, 5000)).toEqual({ options: [{ label: 'A', value: 'a', when: '1970-01-01T00:00:00.000Z' }] });
  });

  it('times out a hanging options method', async () => {
    expect((await pool.options(code, 'slow', {}, 300)).error?.name).toBe('TimeoutError');
  });
});
