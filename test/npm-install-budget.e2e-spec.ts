import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { client, createUser } from './support/accounts';
import { startSystem, System } from './support/system';

/**
 * NPM_INSTALLS_PER_DAY_PER_ACCOUNT (apps/api/src/components/install-budget.ts): each dependency set a component
 * save makes npm install counts for the saving account; past the budget the save answers 429 and npm is not run
 * (the registry, a local stand-in, never hears of the package), while other accounts install as before.
 */
describe('npm installs per account and day', () => {
  let system: System;
  let registry: Server;
  const asked: string[] = [];

  const save = (api: ReturnType<typeof client>, pkg: string) =>
    api.post('/components', { component_code: `import m from "${pkg}";\nexport default { name: "uses ${pkg}", version: "0.0.1", async run() { this.$emit({ m: typeof m }) } };` });

  beforeAll(async () => {
    // Knows no package: every install npm runs fails, after asking it.
    registry = createServer((req, res) => {
      asked.push(decodeURIComponent((req.url ?? '/').slice(1).split('?')[0]));
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Not found"}');
    });
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
    system = await startSystem({ REGISTRY_DIR: 'off', NPM_INSTALLS_PER_DAY_PER_ACCOUNT: '2', NPM_REGISTRY: `http://127.0.0.1:${(registry.address() as AddressInfo).port}/` }, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
    await new Promise((resolve) => registry?.close(resolve));
  });

  it('refuses a third new dependency set with 429 and Retry-After, without running npm; other accounts are not held back', async () => {
    const api = client(system, createUser(system).apiKey);
    for (const pkg of ['ess-budget-a', 'ess-budget-b']) {
      const res = await save(api, pkg);
      expect([res.status, res.body.code]).toEqual([400, 'invalid_component']);
      expect(asked).toContain(pkg);
    }
    const refused = await save(api, 'ess-budget-c');
    expect([refused.status, refused.body.code]).toEqual([429, 'rate_limited']);
    expect(refused.body.error).toContain('NPM_INSTALLS_PER_DAY_PER_ACCOUNT');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(24 * 3600 - 300);
    expect(retryAfter).toBeLessThanOrEqual(24 * 3600);
    expect(asked).not.toContain('ess-budget-c');

    const other = await save(client(system, createUser(system).apiKey), 'ess-budget-c');
    expect([other.status, other.body.code]).toEqual([400, 'invalid_component']);
    expect(asked).toContain('ess-budget-c');
  });
});
