import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, parseDurations, SETTINGS } from './config';

describe('configuration', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cfg-'));

  it('applies defaults', () => {
    const c = loadConfig({ DATA_DIR: dataDir });
    expect(c.port).toBe(3000);
    expect(c.publicUrl).toBe('http://localhost:3000');
    expect(c.secretsKey).toHaveLength(32);
    expect(c.webhookRetryDelaysMs).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
  });

  it('keeps the generated secrets key across loads', () => {
    expect(loadConfig({ DATA_DIR: dataDir }).secretsKey.equals(loadConfig({ DATA_DIR: dataDir }).secretsKey)).toBe(true);
  });

  it.each([
    [{ PORT: 'abc' }, /PORT must be an integer/],
    [{ PORT: '70000' }, /PORT must be at most 65535/],
    [{ DATABASE_URL: 'not a url' }, /DATABASE_URL must be a URL/],
    [{ ALLOW_LOOPBACK: 'maybe' }, /ALLOW_LOOPBACK must be true or false/],
    [{ SECRETS_KEY: 'short' }, /SECRETS_KEY must hold 32 bytes/],
    [{ WEBHOOK_RETRY_SCHEDULE: '5s,soon' }, /WEBHOOK_RETRY_SCHEDULE/],
  ])('names the variable of a wrong value: %p', (env, message) => {
    expect(() => loadConfig({ DATA_DIR: dataDir, ...env })).toThrow(message);
  });

  it('parses duration lists', () => {
    expect(parseDurations('X', '200ms,1s,2m')).toEqual([200, 1000, 120_000]);
  });

  it('documents every setting in the README', () => {
    const readme = readFileSync(join(__dirname, '..', '..', '..', 'README.md'), 'utf8');
    const missing = Object.values(SETTINGS).map((s) => s.env).filter((env) => !readme.includes(`\`${env}\``));
    expect(missing).toEqual([]);
  });
});
