import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ComponentPreparer } from './preparer';
import { InstallRefusedError } from './types';

describe('ComponentPreparer and install admission', () => {
  it("a caller joining another's preparation that was refused asks its own admission", async () => {
    const preparer = new ComponentPreparer({ npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-prep-')), installTimeoutMs: 120_000 });
    const code = `const isNumber = require("is-number@^7.0.0");\nmodule.exports = { name: "n", version: "0.0.1", async run() { this.$emit(isNumber(1)); } };`;
    const fetchText = async () => {
      throw new Error('no fetch');
    };
    const refuse = () => {
      throw new InstallRefusedError('over budget', 60);
    };
    const refused = preparer.prepare({ code, fetchText, admitInstall: refuse });
    const admitted: string[] = [];
    const joined = preparer.prepare({ code, fetchText, admitInstall: (deps) => void admitted.push(Object.keys(deps).join()) });
    await expect(refused).rejects.toBeInstanceOf(InstallRefusedError);
    expect((await joined).versions['is-number']).toMatch(/^7\./);
    expect(admitted).toEqual(['is-number']);
  });
});
