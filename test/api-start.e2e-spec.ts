import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { startSystem, System } from './support/system';

/** A wrong setting stops the api with a message naming the variable (issue 2). */
describe('api start with a wrong HOST', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({}, { apps: [] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it.each([['10.255.255.1'], ['no-such-host.invalid']])('HOST=%s exits non-zero naming HOST', (host) => {
    const r = spawnSync(process.execPath, [join(__dirname, '..', 'dist', 'apps', 'api', 'main.js')], {
      env: { ...system.appEnv('api'), HOST: host, REGISTRY_DIR: 'off' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`api failed to start: cannot listen on HOST=${host}`);
  });
});
