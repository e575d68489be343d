import { client, createUser } from './support/accounts';
import { startSystem, System } from './support/system';

/**
 * Code nested a few hundred thousand levels deep overflows the stack of the compiler (esbuild, one process per
 * api) and ends it. Every later save of every account then failed with "The service is no longer running"
 * until the api was restarted.
 */
describe('a component that ends the compiler', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({ REGISTRY_DIR: 'off' }, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('is refused (400), and every account still saves and deploys components after it', async () => {
    const attacker = createUser(system);
    const other = createUser(system);
    const deep = `module.exports = { name: "deep", version: "1", props: {}, run() {}, x: ${'['.repeat(400_000)}${']'.repeat(400_000)} };`;
    for (let i = 0; i < 2; i++) {
      const refused = await client(system, attacker.apiKey).post('/components', { component_code: deep });
      expect([i, refused.status, refused.body.code]).toEqual([i, 400, 'invalid_component']);
      expect(refused.body.error).toContain('the compiler stopped on this code');
    }
    const saved = await client(system, other.apiKey).post('/components', { component_code: 'module.exports = { name: "after", version: "1", props: {}, run() {} };' });
    expect(saved.status).toBe(200);
    const deployed = await client(system, other.apiKey).post('/sources', { component_code: 'module.exports = { name: "after-source", version: "1", props: {}, run() {} };' });
    expect(deployed.status).toBe(200);
  });
});
