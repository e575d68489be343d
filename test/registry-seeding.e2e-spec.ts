import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * The api listens before the shipped registry is seeded: a registry whose first file
 * takes COMPONENT_READ_TIMEOUT_MS to read (an endless loop at load) does not hold back
 * /healthz, which reports `registry: "seeding"`, then `"ready"`; a registry lookup made
 * while seeding waits for the seed and answers 200.
 */
describe('registry seeding in the background', () => {
  let system: System;
  const READ_TIMEOUT_MS = 12_000;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ess-registry-'));
    writeFileSync(join(dir, 'a-slow.js'), 'while (true) {}\nmodule.exports = { key: "slow-one", name: "Slow", version: "1.0.0", async run() {} };\n');
    writeFileSync(join(dir, 'b-ok.js'), 'module.exports = { key: "test-seeded", name: "Seeded", version: "1.0.0", async run() { this.$emit({ ok: true }); } };\n');
    system = await startSystem({ REGISTRY_DIR: dir, COMPONENT_READ_TIMEOUT_MS: String(READ_TIMEOUT_MS) }, { apps: ['api'] });
  });
  afterAll(async () => system?.stop());

  const health = async (): Promise<{ status: string; registry: string }> => {
    const res = await fetch(`${system.origin}/healthz`);
    expect(res.status).toBe(200);
    return (await res.json()) as { status: string; registry: string };
  };

  it('answers /healthz while seeding, waits for the seed on a registry lookup, then reports ready', async () => {
    expect(await health()).toMatchObject({ status: 'ok', registry: 'seeding' });
    const api = client(system, createUser(system).apiKey);
    // Committed with the whole seed, after the slow file's read timed out: the lookup waits for it.
    const res = await api.get('/components/registry/test-seeded');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ key: 'test-seeded', version: '1.0.0' });
    expect(await health()).toMatchObject({ status: 'ok', registry: 'ready' });
    expect((await api.get('/components/registry/slow-one')).status).toBe(404);
    expect(system.logs('api')).toContain('a-slow.js was not published');
  });
});
