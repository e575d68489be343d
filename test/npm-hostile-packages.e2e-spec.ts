import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dependencySetKey } from '../libs/sandbox/src/npm-installer';
import { client, createUser } from './support/accounts';
import { startSystem, System } from './support/system';

/**
 * Packages a tenant publishes on the npm registry (here a local stand-in, NPM_REGISTRY) and imports.
 *
 * One whose own dependencies are not registry packages: a tarball URL of a service only this machine reaches, a git
 * repository over HTTP, a file tarball and a directory of the host. The import itself is a plain registry name, so the
 * check of import pins does not see them; npm would fetch them from the api's host (outside the egress policy) and
 * hand what it got to the tenant's sandbox, whose top-level code reads it back in the component's name.
 *
 * One that unpacks to more than NPM_INSTALL_MAX_MB: it would stay on the disk NATS and every account's sets use.
 */
describe('npm packages a hostile tenant publishes', () => {
  let system: System;
  let registry: Server;
  let internal: Server;
  let api: ReturnType<typeof client>;
  let work: string;
  const internalHits: string[] = [];
  const packages: Record<string, Record<string, string>> = {};
  // Names of this run only: the tests' npm cache outlives a run, and a set installed once is not installed again.
  const run = Date.now().toString(36);
  const n = (name: string) => `${name}-${run}`;

  const tarball = (name: string, main: string, dependencies: Record<string, string> = {}, padBytes = 0): string => {
    const dir = join(work, name);
    mkdirSync(join(dir, 'package'), { recursive: true });
    if (padBytes) writeFileSync(join(dir, 'package', 'pad.bin'), randomBytes(padBytes));
    writeFileSync(join(dir, 'package', 'package.json'), JSON.stringify({ name, version: '1.0.0', main: 'index.js', dependencies }));
    writeFileSync(join(dir, 'package', 'index.js'), main);
    const out = join(work, `${name}-1.0.0.tgz`);
    execFileSync('tar', ['-czf', out, '-C', dir, 'package']);
    return out;
  };
  const port = (s: Server) => (s.address() as AddressInfo).port;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'ess-npm-sources-'));
    internal = createServer((req, res) => {
      internalHits.push(req.url ?? '');
      if (req.url === '/internal.tgz') return res.end(readFileSync(tarball('ess-internal', 'module.exports = "INTERNAL-ONLY";')));
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
    // The host's own files: a directory the api can read, and a tarball in it.
    const hostDir = join(work, 'host-dir');
    mkdirSync(hostDir);
    writeFileSync(join(hostDir, 'package.json'), JSON.stringify({ name: 'ess-host-dir', version: '1.0.0' }));
    writeFileSync(join(hostDir, 'index.js'), 'module.exports = "HOST-DIR";');
    const hostTarball = tarball('ess-host-file', 'module.exports = "HOST-FILE";');
    const deps: Record<string, Record<string, string>> = {
      [n('ess-evil-url')]: { 'ess-internal': `http://127.0.0.1:${port(internal)}/internal.tgz` },
      [n('ess-evil-git')]: { 'ess-gitdep': `git+http://127.0.0.1:${port(internal)}/repo.git` },
      [n('ess-evil-file')]: { 'ess-host-file': `file:${hostTarball}` },
      [n('ess-evil-dir')]: { 'ess-host-dir': `file:${hostDir}` },
      'ess-plain-child': {},
      [n('ess-plain')]: { 'ess-plain-child': '^1.0.0' },
      [n('ess-huge')]: {},
    };
    const tarballs: Record<string, Buffer> = {};
    for (const [name, d] of Object.entries(deps)) {
      const inner = Object.keys(d)[0];
      const main = inner ? `module.exports = String(require(${JSON.stringify(inner)}));` : 'module.exports = "FROM-REGISTRY";';
      tarballs[name] = readFileSync(tarball(name, main, d, name === n('ess-huge') ? 24 * 1024 * 1024 : 0));
      packages[name] = d;
    }
    registry = createServer((req, res) => {
      const path = decodeURIComponent((req.url ?? '/').split('?')[0]);
      const [name, tgz] = path.slice(1).split('/-/');
      if (!packages[name]) return res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Not found"}');
      if (tgz) return res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(tarballs[name]);
      const version = { name, version: '1.0.0', main: 'index.js', dependencies: packages[name], dist: { tarball: `http://127.0.0.1:${port(registry)}/${name}/-/${name}-1.0.0.tgz` } };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ name, 'dist-tags': { latest: '1.0.0' }, versions: { '1.0.0': version } }));
    });
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
    system = await startSystem({ REGISTRY_DIR: 'off', NPM_REGISTRY: `http://127.0.0.1:${port(registry)}/`, NPM_INSTALL_MAX_MB: '8' }, { apps: ['api'] });
    api = client(system, createUser(system).apiKey);
  });
  afterAll(async () => {
    await system?.stop();
    await Promise.all([registry, internal].map((s) => new Promise((resolve) => s?.close(resolve))));
    rmSync(work, { recursive: true, force: true });
  });

  // Top-level code runs in the tenant's sandbox when the api reads the component: whatever npm installed shows in its name.
  const save = (pkg: string) =>
    api.post('/components', { component_code: `import got from "${pkg}";\nexport default { name: "leak " + got, version: "0.0.1", async run() {} };` });

  it.each([
    ['ess-evil-url', 'a tarball URL of a service only this machine reaches', 'remote'],
    ['ess-evil-git', 'a git repository', 'git'],
    ['ess-evil-file', 'a tarball file of the host', 'file'],
    ['ess-evil-dir', 'a directory of the host', 'directory'],
  ])('refuses %s, whose dependency is %s, without fetching it', async (pkg, _what, kind) => {
    const res = await save(n(pkg));
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_component');
    expect(res.body.error).toContain(`a dependency of the component is a ${kind} dependency`);
    expect(res.body.error).toContain('only registry packages are installed');
    expect(JSON.stringify(res.body)).not.toMatch(/INTERNAL-ONLY|HOST-DIR|HOST-FILE/);
    expect(internalHits).toEqual([]);
  });

  it('still installs a package whose dependencies all come from the registry', async () => {
    const res = await save(n('ess-plain'));
    expect(res.status).toBe(200);
    expect(res.body.data.name).toBe('leak FROM-REGISTRY');
  });

  // 24 MiB of random bytes in one package (a package anyone can publish may unpack to gigabytes on the disk NATS uses).
  it('refuses a dependency set larger than NPM_INSTALL_MAX_MB, and keeps nothing of it on disk', async () => {
    const res = await save(n('ess-huge'));
    expect([res.status, res.body.code]).toEqual([400, 'invalid_component']);
    expect(res.body.error).toContain("the component's npm dependencies take more than 8 MiB on disk, the most NPM_INSTALL_MAX_MB allows");
    expect(existsSync(join(system.env.DATA_DIR, 'npm', dependencySetKey({ [n('ess-huge')]: 'latest' })))).toBe(false);
  });
});
