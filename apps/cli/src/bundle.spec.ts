import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { SourceMap } from 'node:module';
import { join } from 'node:path';
import { bundleComponent as serverBundle } from '@app/sandbox';
import { bundleComponent } from './bundle';

describe('bundling a local component', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pd-bundle-'));
  mkdirSync(join(dir, 'common'));
  writeFileSync(join(dir, 'app.app.mjs'), 'export default { type: "app", app: "demo" };\n');
  writeFileSync(join(dir, 'common', 'base.mjs'), 'import app from "../app.app.mjs";\nexport default { props: { app } };\n');
  writeFileSync(join(dir, 'esm.mjs'), 'import common from "./common/base.mjs";\nimport { axios } from "@pipedream/platform";\nexport default { ...common, name: "E", version: "1", async run() { return axios; } };\n');
  writeFileSync(join(dir, 'helper.js'), 'module.exports = { double: (x) => x * 2 };\n');
  writeFileSync(join(dir, 'cjs.js'), 'const { double } = require("./helper");\nconst _ = require("lodash");\nmodule.exports = { name: "C", version: "1", async run() { return double(_.size([])); } };\n');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const single = 'module.exports = { name: "S", version: "1", async run() {} };\n';
  writeFileSync(join(dir, 'single.js'), single);

  it('inlines relative ESM imports, keeps npm imports and the ESM default export', async () => {
    const b = await bundleComponent(join(dir, 'esm.mjs'));
    expect(b.format).toBe('esm');
    expect(b.bundled).toBe(true);
    expect(b.inputs).toEqual([join(dir, 'esm.mjs'), join(dir, 'app.app.mjs'), join(dir, 'common', 'base.mjs')]);
    expect(b.code).toContain('import { axios } from "@pipedream/platform"');
    expect(b.code).toMatch(/export \{\s*\w+ as default\s*\}/);
    expect(b.code).not.toContain('./common/base.mjs"');
  });

  it("sends a bundle whose lines the server maps back to the component's own files", async () => {
    writeFileSync(join(dir, 'common', 'fail.mjs'), 'export function fail(x) {\n  const y = x + 1;\n  throw new Error("boom " + y);\n}\n');
    writeFileSync(join(dir, 'notify.mjs'), 'import { fail } from "./common/fail.mjs";\n\nexport default defineComponent({\n  async run({ steps, $ }) {\n    return fail(1);\n  },\n});\n');
    const b = await bundleComponent(join(dir, 'notify.mjs'));
    expect(b.bundled).toBe(true);
    expect(b.code).toMatch(/\n\/\/# sourceMappingURL=data:application\/json;base64,\S+\n$/);
    // What the sandbox does with a frame of the server's bundle (libs/sandbox worker/stack-map.ts).
    const server = await serverBundle({ code: b.code, fetchText: () => Promise.reject(new Error('no imports by URL here')) });
    const map = new SourceMap(JSON.parse(server.map!));
    const lines = server.code.split('\n');
    const at = (text: string) => {
      const line = lines.findIndex((l) => l.includes(text));
      const e = map.findEntry(line, lines[line].indexOf(text)) as { originalSource?: string; originalLine?: number };
      return `${e.originalSource}:${(e.originalLine ?? -2) + 1}`;
    };
    expect(at('throw new Error')).toBe('common/fail.mjs:3');
    expect(at('return fail(1)')).toBe('notify.mjs:5');
  });

  it('keeps CommonJS as CommonJS, with extension-less relative requires inlined', async () => {
    const b = await bundleComponent(join(dir, 'cjs.js'));
    expect(b.format).toBe('cjs');
    expect(b.inputs).toHaveLength(2);
    expect(b.code).toContain('require("lodash")');
    expect(b.code).toContain('module.exports =');
    expect(b.code).not.toContain('require("./helper")');
  });

  it('sends a single-file component as written, and names a missing import', async () => {
    expect(await bundleComponent(join(dir, 'single.js'))).toEqual({ code: single, format: 'cjs', inputs: [join(dir, 'single.js')], bundled: false });
    writeFileSync(join(dir, 'broken.mjs'), 'import x from "./missing.mjs";\nexport default x;\n');
    await expect(bundleComponent(join(dir, 'broken.mjs'))).rejects.toThrow(/broken\.mjs:1:15: Could not resolve "\.\/missing\.mjs"/);
    await expect(bundleComponent(join(dir, 'nope.mjs'))).rejects.toThrow(/file not found/);
  });

  it('pins unpinned npm imports to the nearest package.json dependencies, as Node would load them', async () => {
    const app = join(dir, 'pinned-app');
    mkdirSync(join(app, 'sources'), { recursive: true });
    const deps = { '@polar-sh/sdk': '^0.44.0', lodash: '4.17.21', '@pipedream/platform': '^1.6.8', fs: '^0.0.1-security', local: 'file:../x', axios: '1.x' };
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: '@pipedream/pinned', dependencies: deps }));
    const code = 'import { Polar } from "@polar-sh/sdk";\nimport get from "lodash/get.js";\nimport { axios } from "@pipedream/platform";\nimport fs from "fs";\nimport l from "local";\nimport a from "axios@0.19.2";\nexport default { name: "P", version: "1", async run() { return [Polar, get, axios, fs, l, a]; } };\n';
    writeFileSync(join(app, 'sources', 'single.mjs'), code);
    const b = await bundleComponent(join(app, 'sources', 'single.mjs'));
    expect(b.bundled).toBe(true);
    expect(b.code).toContain('from "@polar-sh/sdk@^0.44.0"');
    expect(b.code).toContain('from "lodash@4.17.21/get.js"');
    // The runtime's own platform, a builtin, a file: range and an import with its own pin are left as written.
    expect(b.code).toContain('from "@pipedream/platform"');
    expect(b.code).toContain('from "fs"');
    expect(b.code).toContain('from "local"');
    expect(b.code).toContain('from "axios@0.19.2"');
    // Without a package.json, a single file is sent as written.
    expect((await bundleComponent(join(dir, 'single.js'))).bundled).toBe(false);
  });
});
