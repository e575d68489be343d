import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { client, createUser } from './support/accounts';
import { startSystem, System } from './support/system';

/**
 * A version the npm registry lacks, asked for by a dependency rather than by the component's own import:
 * Pipedream's Oracle Cloud Infrastructure sources import `oci-common` and `oci-identity` unpinned, and
 * `oci-identity` pins `oci-common` exactly. The registry is a local stand-in (NPM_REGISTRY) serving
 * package documents only; the real npm client resolves against it and fails with ETARGET.
 */
describe('npm ETARGET for a version a dependency asks for', () => {
  let system: System;
  let registry: Server;
  let api: ReturnType<typeof client>;

  const packages: Record<string, Record<string, Record<string, string>>> = {
    // name → version → dependencies
    'ess-gap-child': { '1.0.0': {} },
    'ess-gap-parent': { '1.0.0': { 'ess-gap-child': '2.0.0' } },
    'ess-gap-ranged': { '1.0.0': { 'ess-gap-child': '>=2 <3' } },
  };

  const save = (imports: string[]) => {
    const code = `${imports.map((spec, i) => `import m${i} from "${spec}";`).join('\n')}
export default { name: "registry gap", version: "0.0.1", async run() { this.$emit({ n: [${imports.map((_, i) => `m${i}`).join(', ')}].length }) } };`;
    return api.post('/components', { component_code: code });
  };

  beforeAll(async () => {
    registry = createServer((req, res) => {
      const name = decodeURIComponent((req.url ?? '/').slice(1).split('?')[0]);
      const versions = packages[name];
      if (!versions) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Not found"}');
        return;
      }
      const base = `http://127.0.0.1:${(registry.address() as AddressInfo).port}`;
      const doc = {
        name,
        'dist-tags': { latest: Object.keys(versions).pop() },
        versions: Object.fromEntries(
          Object.entries(versions).map(([version, dependencies]) => [version, { name, version, dependencies, dist: { tarball: `${base}/${name}/-/${name}-${version}.tgz` } }]),
        ),
      };
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(doc));
    });
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
    system = await startSystem({ REGISTRY_DIR: 'off', NPM_REGISTRY: `http://127.0.0.1:${(registry.address() as AddressInfo).port}/` }, { apps: ['api'] });
    api = client(system, createUser(system).apiKey);
  });
  afterAll(async () => {
    await system?.stop();
    await new Promise((resolve) => registry?.close(resolve));
  });

  it('names the dependency when the component imports the same package at another range', async () => {
    const res = await save(['ess-gap-child', 'ess-gap-parent']);
    expect(res.status).toBe(400);
    expect(res.body.error).toContain(
      'the npm registry has no version of ess-gap-child matching "2.0.0" (ETARGET): a dependency of the component asks for ess-gap-child@2.0.0 (the component itself imports ess-gap-child@latest)',
    );
  });

  it('reads a range with spaces a dependency asks for', async () => {
    const res = await save(['ess-gap-ranged']);
    expect(res.status).toBe(400);
    expect(res.body.error).toContain('the npm registry has no version of ess-gap-child matching ">=2 <3" (ETARGET): a dependency of the component asks for ess-gap-child@>=2 <3');
  });

  it('names the import when the component pins the missing version itself', async () => {
    const res = await save(['ess-gap-child@2.0.0']);
    expect(res.status).toBe(400);
    expect(res.body.error).toContain('the npm registry has no version of ess-gap-child matching "2.0.0" (ETARGET): the component imports ess-gap-child@2.0.0');
  });
});
