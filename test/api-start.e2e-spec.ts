import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { startSystem, System } from './support/system';

/** A wrong setting stops the api with a message naming the variable (issue 2). */
describe('api start with a wrong setting', () => {
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

  // Checked with the rest of the configuration: exit 78 and one line naming the variable, before anything starts.
  it.each([
    ['SANDBOX_EGRESS_ALLOW', 'nonsense', 'SANDBOX_EGRESS_ALLOW must be a comma-separated list of ip, cidr, ip:port or cidr:port (IPv6 in brackets before a port: [::1]:5432), got "nonsense"'],
    ['SMTP_URL', 'http://x', 'SMTP_URL must be a smtp:// or smtps:// URL, got "http://x"'],
    ['S3_ENDPOINT', 'notaurl', 'S3_ENDPOINT must be a URL, got "notaurl"'],
  ])('%s=%s exits 78 with the configuration error', (name, value, message) => {
    const r = spawnSync(process.execPath, [join(__dirname, '..', 'dist', 'apps', 'api', 'main.js')], {
      env: { ...system.appEnv('api'), [name]: value, REGISTRY_DIR: 'off' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 78, stderr: `configuration error: ${message}\n` });
  });
});
