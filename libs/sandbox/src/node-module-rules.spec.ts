import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxPool } from './pool';
import { task } from './test-support/components';

/**
 * Node's module rules, as Pipedream runs components (Node ES modules): a default import
 * of a CommonJS package binds `module.exports` whatever `__esModule` says; top-level
 * `await` in a component and in the modules it imports.
 */
describe('SandboxPool: Node module semantics', () => {
  let pool: SandboxPool;

  beforeAll(() => {
    pool = new SandboxPool({ threads: 1, heapMb: 256, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-sbx-npm-')) });
  });
  afterAll(async () => {
    await pool.close();
  });

  it('binds module.exports for default imports of real CommonJS packages that set __esModule (installed from the npm registry)', async () => {
    // The import lines of Pipedream's notion, google_drive, pipedrive and woocommerce apps.
    const code = `
      import notion from "@notionhq/client";
      import drive from "@googleapis/drive";
      import pipedrive from "pipedrive";
      import WooCommerceRestApi from "@woocommerce/woocommerce-rest-api";
      import * as notionNs from "@notionhq/client";
      import { Client } from "@notionhq/client";
      const { v1 } = pipedrive;
      export default {
        name: "interop", version: "1",
        run() {
          const client = new notion.Client({ auth: "secret_x" });
          this.$emit({
            notionClient: typeof notion.Client,
            notionNamed: Client === notion.Client,
            notionNsDefault: notionNs.default === notion,
            notionNsNamed: notionNs.Client === Client,
            hasPages: typeof client.pages.retrieve,
            drive: typeof drive.drive,
            pipedriveV1: typeof v1,
            wooModule: typeof WooCommerceRestApi,
            wooClass: typeof WooCommerceRestApi.default,
          });
        },
      };`;
    const d = await pool.describe(code, { timeoutMs: 240_000 });
    expect(d.error).toBeUndefined();
    const r = await pool.execute(task(code, { dependencyVersions: d.dependencyVersions, timeoutMs: 60_000 }));
    expect(r.error).toBeUndefined();
    expect(r.emits[0].event).toEqual({
      notionClient: 'function',
      notionNamed: true,
      notionNsDefault: true,
      notionNsNamed: true,
      hasPages: 'function',
      drive: 'function',
      pipedriveV1: 'object',
      wooModule: 'object',
      wooClass: 'function',
    });
  }, 300_000);

  it('binds the default export of an ES module and module.exports of a local CommonJS file, as Node does', async () => {
    const files: Record<string, string> = {
      'https://c.test/s/cjs-lib.js': 'exports.__esModule = true; exports.answer = 42;',
      'https://c.test/s/esm-lib.mjs': 'export default { kind: "esm default" }; export const n = 1;',
    };
    const code = `
      import cjs from "./cjs-lib.js";
      import esm, { n } from "./esm-lib.mjs";
      export default { name: "local", version: "1", run() { this.$emit({ cjs, esm, n }) } };`;
    const d = await pool.describe(code, { baseUrl: 'https://c.test/s/entry.mjs', timeoutMs: 30_000, fetchText: async (u) => files[u] });
    expect(d.error).toBeUndefined();
    const r = await pool.execute(task(d.bundle!));
    expect(r.error).toBeUndefined();
    expect(r.emits[0].event).toEqual({ cjs: { __esModule: true, answer: 42 }, esm: { kind: 'esm default' }, n: 1 });
  });

  it('binds module.exports of CommonJS whose exports object carries Symbol.toStringTag "Module" (webpack, rolldown output)', async () => {
    // salesforce-webhooks' dist is webpack output: its module.exports has toStringTag "Module" and __esModule but
    // no default; Node binds module.exports. The import sits in a local file, as in Pipedream's salesforce_rest_api.
    const files: Record<string, string> = {
      'https://c.test/w/webpacked.js':
        'Object.defineProperty(exports, Symbol.toStringTag, { value: "Module" }); Object.defineProperty(exports, "__esModule", { value: true }); exports.Client = class Client {};',
      'https://c.test/w/common.mjs': 'import webpacked from "./webpacked.js"; const { Client } = webpacked; export default { client: typeof Client };',
      'https://c.test/w/tla.mjs': 'import webpacked from "./webpacked.js"; export const viaTla = await Promise.resolve(typeof webpacked.Client);',
    };
    for (const withTla of [false, true]) {
      const code = `
        import common from "./common.mjs";
        ${withTla ? 'import { viaTla } from "./tla.mjs";' : 'const viaTla = "function";'}
        export default { name: "webpacked", version: "1", run() { this.$emit({ ...common, viaTla }) } };`;
      const d = await pool.describe(code, { baseUrl: 'https://c.test/w/entry.mjs', timeoutMs: 30_000, fetchText: async (u) => files[u] ?? null });
      expect(d.error).toBeUndefined();
      const r = await pool.execute(task(d.bundle!));
      expect(r.error).toBeUndefined();
      expect(r.emits[0].event).toEqual({ client: 'function', viaTla: 'function' });
    }
  });

  it('runs a component with top-level await, also in a module it imports', async () => {
    const files: Record<string, string> = {
      'https://c.test/t/config.mjs': 'export const settings = await Promise.resolve({ region: "eu" }); export default await Promise.resolve("cfg");',
    };
    const code = `
      import cfg, { settings } from "./config.mjs";
      import { axios } from "@pipedream/platform";
      const started = await new Promise((r) => setTimeout(() => r("ready"), 5));
      export default { name: "tla", version: "1", props: { n: { type: "integer", default: 2 } }, run() { this.$emit({ started, cfg, settings, axios: typeof axios, n: this.n }) } };`;
    const d = await pool.describe(code, { baseUrl: 'https://c.test/t/entry.mjs', timeoutMs: 30_000, fetchText: async (u) => files[u] });
    expect(d.error).toBeUndefined();
    expect(d.descriptor).toMatchObject({ name: 'tla', format: 'esm', props: [{ name: 'n', type: 'integer', default: 2 }] });
    const r = await pool.execute(task(d.bundle!, { props: { n: 3 } }));
    expect(r.error).toBeUndefined();
    expect(r.emits[0].event).toEqual({ started: 'ready', cfg: 'cfg', settings: { region: 'eu' }, axios: 'function', n: 3 });
  });

  it('stops a top-level await that never settles at the load timeout', async () => {
    const r = await pool.execute(task('await new Promise(() => {}); export default { name: "x", version: "1", run() {} }', { timeoutMs: 300 }));
    expect(r.error).toMatchObject({ name: 'TimeoutError', message: expect.stringContaining('top-level await') });
  });

  it('reports an error thrown after a top-level await with the component line', async () => {
    const r = await pool.execute(task('await null;\nthrow new Error("after await");\nexport default { name: "x", version: "1", run() {} }'));
    expect(r.error).toMatchObject({ message: 'after await' });
    expect(r.error?.stack).toContain('component.js:2:');
  });
});
