import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkRegistryOnly, dependencySetKey, missingVersion, missingVersionError, NpmInstaller, refusedSourceError, treeBytes } from './npm-installer';
import { dependencyMap, parseBareSpecifier } from './specifiers';
import { InstallRefusedError, type SandboxLogger } from './types';

describe('bare specifiers', () => {
  it('parses pins, scopes, subpaths and builtins', () => {
    expect(parseBareSpecifier('axios@0.19.2')).toEqual({ name: 'axios', version: '0.19.2', subpath: '', builtin: false });
    expect(parseBareSpecifier('@octokit/rest@^18.0.0/dist/x.js')).toEqual({ name: '@octokit/rest', version: '^18.0.0', subpath: '/dist/x.js', builtin: false });
    expect(parseBareSpecifier('mysql2/promise')).toEqual({ name: 'mysql2', version: undefined, subpath: '/promise', builtin: false });
    expect(parseBareSpecifier('crypto')?.builtin).toBe(true);
    expect(parseBareSpecifier('crypto@1.0.1')?.builtin).toBe(true);
    expect(parseBareSpecifier('fs/promises')?.builtin).toBe(true);
    expect(parseBareSpecifier('node:fs')?.builtin).toBe(true);
    expect(parseBareSpecifier('./x')).toBeUndefined();
    expect(parseBareSpecifier('../x.mjs')).toBeUndefined();
    expect(parseBareSpecifier('/abs')).toBeUndefined();
    expect(parseBareSpecifier('https://x.test/a.js')).toBeUndefined();
  });

  it('builds the install map: pins win, builtins and the unpinned platform package are left out', () => {
    expect(dependencyMap(['lodash/get.js', 'lodash@4.17.21', 'crypto', '@pipedream/platform', 'is-number', 'got@~11.8'])).toEqual({
      lodash: '4.17.21',
      'is-number': 'latest',
      got: '~11.8',
    });
    expect(dependencyMap(['@pipedream/platform@1.6.0'])).toEqual({ '@pipedream/platform': '1.6.0' });
  });
});

/** Installers sharing one new cache directory, and the installs they logged. */
function sharedCache() {
  const cacheDir = mkdtempSync(join(tmpdir(), 'ess-npm-'));
  const installs: object[] = [];
  const logger: SandboxLogger = { info: (o) => installs.push(o), warn: () => {}, error: () => {}, debug: () => {} };
  return { cacheDir, installs, installer: () => new NpmInstaller({ cacheDir, timeoutMs: 120_000, logger }) };
}

describe('NpmInstaller', () => {
  it('installs a dependency set once even when two replicas sharing the directory ask at the same time', async () => {
    const { cacheDir, installs, installer } = sharedCache();
    const a = installer();
    const b = installer();
    const deps = { 'is-number': '^7.0.0' };
    const [ra, rb, ra2] = await Promise.all([a.install(deps), b.install(deps), a.install(deps)]);
    expect(installs).toHaveLength(1);
    expect(ra).toEqual(rb);
    expect(ra2).toBe(ra);
    expect(ra.versions['is-number']).toMatch(/^7\.\d+\.\d+$/);
    expect(existsSync(join(ra.dir, 'node_modules', 'is-number', 'package.json'))).toBe(true);
    expect(readdirSync(cacheDir).filter((n) => n.endsWith('.lock'))).toEqual([]);
    // The exact-version set resolves to the same install.
    const exact = join(cacheDir, dependencySetKey(ra.versions));
    expect(lstatSync(exact).isSymbolicLink()).toBe(true);
    const rc = await installer().install(ra.versions);
    expect(rc.versions).toEqual(ra.versions);
    expect(installs).toHaveLength(1);
  });
});

describe('NpmInstaller admission', () => {
  it('asks only before a set it installs; a refusal is not remembered, an installed set needs no admission', async () => {
    const { cacheDir, installs, installer: another } = sharedCache();
    const installer = another();
    const deps = { 'is-number': '^7.0.0' };
    const asked: string[] = [];
    const refuse = () => {
      asked.push('refused');
      throw new InstallRefusedError('over budget', 60);
    };
    await expect(installer.install(deps, refuse)).rejects.toMatchObject({ name: 'InstallRefusedError', retryAfterSeconds: 60 });
    expect(installs).toHaveLength(0);
    expect(existsSync(join(cacheDir, dependencySetKey(deps), 'node_modules'))).toBe(false);
    // Asked again at once (no remembered failure), and allowed this time.
    const installed = await installer.install(deps, () => void asked.push('admitted'));
    expect(installs).toHaveLength(1);
    // Installed: free for anyone, even a caller whose budget would refuse.
    expect(await installer.install(deps, refuse)).toEqual(installed);
    expect(await another().install(deps, refuse)).toEqual(installed);
    expect(asked).toEqual(['refused', 'admitted']);
  });
});

describe('pinned versions the registry lacks', () => {
  it('reads npm ETARGET as the package and the range', () => {
    expect(missingVersion('npm error code ETARGET\nnpm error notarget No matching version found for is-number@99.0.0.\nnpm error notarget In most cases…')).toEqual({ name: 'is-number', range: '99.0.0' });
    expect(missingVersion('npm error notarget No matching version found for @octokit/rest@^99.1.0.')).toEqual({ name: '@octokit/rest', range: '^99.1.0' });
    expect(missingVersion('npm error code E404')).toBeUndefined();
  });

  it('reads a range with spaces, as a dependency may ask for one', () => {
    expect(missingVersion('npm error notarget No matching version found for is-number@>=99 <100.\nnpm error notarget In most cases…')).toEqual({ name: 'is-number', range: '>=99 <100' });
    expect(missingVersion('npm error notarget No matching version found for @scope/pkg@^1.9 || ^2.1.')).toEqual({ name: '@scope/pkg', range: '^1.9 || ^2.1' });
  });

  it('names the dependency, not the import, when the range npm could not satisfy is not the one the component imports', () => {
    // Oracle Cloud Infrastructure's sources import oci-common and oci-identity unpinned; oci-identity 2.140.2 pins oci-common 2.140.2.
    const stderr = 'npm error code ETARGET\nnpm error notarget No matching version found for oci-common@2.140.2.\nnpm error notarget In most cases you or one of your dependencies are requesting a package version that doesn\'t exist.';
    expect(missingVersionError(stderr, { 'oci-common': 'latest', 'oci-identity': 'latest' })?.message).toBe(
      'the npm registry has no version of oci-common matching "2.140.2" (ETARGET): a dependency of the component asks for oci-common@2.140.2 (the component itself imports oci-common@latest)',
    );
    expect(missingVersionError(stderr, { 'oci-identity': 'latest' })?.message).toBe(
      'the npm registry has no version of oci-common matching "2.140.2" (ETARGET): a dependency of the component asks for oci-common@2.140.2',
    );
    expect(missingVersionError(stderr, { 'oci-common': '2.140.2' })?.message).toBe(
      'the npm registry has no version of oci-common matching "2.140.2" (ETARGET): the component imports oci-common@2.140.2',
    );
    expect(missingVersionError('npm error code E404', {})).toBeUndefined();
  });

  it('keeps ranges and tags as ranges and tags, not exact versions', () => {
    expect(dependencyMap(['got@^11.8.0', 'axios@~0.21', 'uuid@8', 'lodash@latest', 'chalk@4.x', 'semver@>=7'])).toEqual({
      got: '^11.8.0',
      axios: '~0.21',
      uuid: '8',
      lodash: 'latest',
      chalk: '4.x',
      semver: '>=7',
    });
  });

  it('fails an install of a pinned version the npm registry does not have with an error naming package and version', async () => {
    const installer = new NpmInstaller({ cacheDir: mkdtempSync(join(tmpdir(), 'ess-npm-')), timeoutMs: 120_000 });
    await expect(installer.install({ 'is-number': '99.0.0', 'is-odd': '^3.0.1' })).rejects.toThrow(
      'the npm registry has no version of is-number matching "99.0.0" (ETARGET): the component imports is-number@99.0.0',
    );
    // A range that exists installs.
    const ok = await installer.install({ 'is-number': '^7' });
    expect(ok.versions['is-number']).toMatch(/^7\./);
  });
});

describe('dependency sets with packages not from the registry', () => {
  const setWith = (packages: object): string => {
    const dir = mkdtempSync(join(tmpdir(), 'ess-set-'));
    mkdirSync(join(dir, 'node_modules'));
    writeFileSync(join(dir, 'node_modules', '.package-lock.json'), JSON.stringify({ lockfileVersion: 3, packages }));
    return dir;
  };

  it('refuses a set that holds a git, file or linked package (an install by an npm that ignored the allow-* settings)', async () => {
    await expect(checkRegistryOnly(setWith({ 'node_modules/a': { version: '1.0.0', resolved: 'git+ssh://git@internal/repo.git#abc' } }))).rejects.toThrow(
      'a dependency of the component is a git dependency (a@git+ssh://git@internal/repo.git#abc)',
    );
    await expect(checkRegistryOnly(setWith({ 'node_modules/x/node_modules/b': { resolved: 'file:../../etc.tgz' } }))).rejects.toThrow('a file dependency (b@file:../../etc.tgz)');
    await expect(checkRegistryOnly(setWith({ 'node_modules/c': { resolved: '../../../data', link: true }, '../../../data': {} }))).rejects.toThrow('a directory dependency (c@../../../data)');
  });

  it('accepts registry packages, and a set with no package at all', async () => {
    await expect(checkRegistryOnly(setWith({ 'node_modules/a': { version: '1.0.0', resolved: 'https://registry.npmjs.org/a/-/a-1.0.0.tgz' } }))).resolves.toBeUndefined();
    await expect(checkRegistryOnly(mkdtempSync(join(tmpdir(), 'ess-set-')))).resolves.toBeUndefined();
  });

  it('reads npm refusals of the allow-* settings', () => {
    expect(refusedSourceError('npm error code EALLOWGIT\nnpm error Refusing to fetch "g@git+file:///srv/repo"')?.message).toContain('a git dependency (g@git+file:///srv/repo)');
    expect(refusedSourceError('npm error code EALLOWREMOTE\n')?.message).toContain('a remote dependency, not a package of the npm registry');
    expect(refusedSourceError('npm error code E404\n')).toBeUndefined();
  });
});

describe('the size of a dependency set on disk', () => {
  it('counts every file and directory as at least a block, so many empty files count', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ess-size-'));
    mkdirSync(join(dir, 'a'));
    for (let i = 0; i < 100; i++) writeFileSync(join(dir, 'a', `f${i}`), '');
    writeFileSync(join(dir, 'big'), Buffer.alloc(100_000));
    expect(await treeBytes(dir)).toBe(4096 + 100 * 4096 + 100_000);
    expect(await treeBytes(join(dir, 'gone'))).toBe(0);
  });
});
