import { bundleComponent } from './bundler';
import { dependencyMap, parseBareSpecifier, pinProblem, stripPin } from './specifiers';

describe('version pins in import strings', () => {
  // Pipedream's docs pin `axios@0.19.2` and `axios@~0.20.0`; npm's grammar gives the rest.
  it.each([
    ['axios@0.19.2', 'axios', '0.19.2', ''],
    ['axios@~0.20.0', 'axios', '~0.20.0', ''],
    ['axios@^1.6', 'axios', '^1.6', ''],
    ['axios@0.21.x', 'axios', '0.21.x', ''],
    ['axios@v0.21.1', 'axios', 'v0.21.1', ''],
    ['axios@>=1', 'axios', '>=1', ''],
    ['axios@latest', 'axios', 'latest', ''],
    ['axios@1.6.0/lib/helpers/bind.js', 'axios', '1.6.0', '/lib/helpers/bind.js'],
    ['@octokit/rest@^18.0.0', '@octokit/rest', '^18.0.0', ''],
    ['@googleapis/sheets@9.3.1/build/index.js', '@googleapis/sheets', '9.3.1', '/build/index.js'],
  ])('%s is package %s, pin %s, subpath "%s", installable', (spec, name, version, subpath) => {
    expect(parseBareSpecifier(spec)).toEqual({ name, version, subpath, builtin: false });
    expect(pinProblem(spec)).toBeUndefined();
    expect(stripPin(parseBareSpecifier(spec)!)).toBe(name + subpath);
  });

  it('keeps every range and tag for npm as written (never narrowed to an exact version)', () => {
    expect(dependencyMap(['axios@~0.20.0', '@octokit/rest@^18.0.0/dist/x.js', 'uuid@8.x', 'lodash@latest', 'got@v11.8.6'])).toEqual({
      axios: '~0.20.0',
      '@octokit/rest': '^18.0.0',
      uuid: '8.x',
      lodash: 'latest',
      got: 'v11.8.6',
    });
  });

  it.each(['x@github:user/repo', 'x@npm:@scope/y@1.0.0', 'x@npm:y@1', 'x@https://host.test/x.tgz', 'x@1.2.3#deadbeef', 'x@file:../y', '@s/p@git+https://host.test/p.git', 'x@..', 'x@.', 'x@.git', 'x@..%2f..', '@s/p@..'])(
    'refuses %s, which the npm registry cannot install, with a clear message',
    (spec) => {
      expect(pinProblem(spec)).toMatch(/a version in an import must be an npm version, range or dist-tag/);
    },
  );

  it('refuses an empty pin', () => {
    expect(pinProblem('axios@')).toBe('import "axios@" has an empty version after "@"');
    expect(pinProblem('@s/p@/x')).toBe('import "@s/p@/x" has an empty version after "@"');
  });

  it('has nothing to say of what is not a package import', () => {
    for (const spec of ['./x@1.js', '../a@b/c.mjs', '/abs/x@1', 'https://host.test/x@1/y.js', 'node:fs', 'axios', '@s/p', 'lodash/get.js']) {
      expect(pinProblem(spec)).toBeUndefined();
    }
  });
});

describe('bundling a component with pins', () => {
  const fetchText = () => Promise.reject(new Error('no fetch in this test'));

  it('lists range and tag pins as written and refuses a git pin at save', async () => {
    const ok = await bundleComponent({
      code: 'import axios from "axios@~0.20.0";\nimport { Octokit } from "@octokit/rest@^18.0.0";\nimport get from "lodash@latest/get.js";\nexport default { props: {}, async run() { return [axios, Octokit, get]; } };',
      fetchText,
    });
    expect(ok.dependencies).toEqual(['@octokit/rest@^18.0.0', 'axios@~0.20.0', 'lodash@latest/get.js']);
    await expect(bundleComponent({ code: 'import x from "x@github:user/repo";\nexport default { async run() { return x; } };', fetchText })).rejects.toThrow(
      /import "x@github:user\/repo": a version in an import must be an npm version, range or dist-tag/,
    );
  });
});
