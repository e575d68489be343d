import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registryDir } from './registry';

describe('registryDir', () => {
  it('is REGISTRY_DIR when that is a directory, nothing for "off", and a wrong value names the variable', () => {
    const dir = mkdtempSync(join(tmpdir(), 'registry-'));
    expect(registryDir({ registryDir: dir })).toBe(dir);
    expect(registryDir({ registryDir: 'off' })).toBeUndefined();
    expect(registryDir({ registryDir: '' })).toMatch(/registry[/\\]components$/);
    expect(() => registryDir({ registryDir: join(dir, 'missing') })).toThrow(/REGISTRY_DIR must be a directory/);
  });
});
