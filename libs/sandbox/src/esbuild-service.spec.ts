import { buildSurvivingCompilerDeath, CompilerStoppedError } from './esbuild-service';

const compile = (code: string) => buildSurvivingCompilerDeath({ stdin: { contents: code }, bundle: true, write: false, format: 'cjs', logLevel: 'silent' }, code);
/** Nested deeper than the compiler's stack holds: it ends the compiler process. */
const DEEP = `module.exports = { x: ${'['.repeat(400_000)}${']'.repeat(400_000)} };`;

describe('buildSurvivingCompilerDeath', () => {
  it('refuses code that ends the compiler, and every build after it still compiles (a new compiler)', async () => {
    const beside = compile('module.exports = { beside: true };');
    await expect(compile(DEEP)).rejects.toThrow(CompilerStoppedError);
    // A build started beside it compiles (tried again on the new compiler if it was in flight when the old one died).
    expect((await beside).outputFiles[0].text).toContain('beside: true');
    expect((await compile('module.exports = { after: 1 };')).outputFiles[0].text).toContain('after: 1');
  }, 60_000);

  it('refuses the same code at once the next time, without stopping the compiler again', async () => {
    const beside = compile('module.exports = { beside: 2 };');
    await expect(compile(DEEP)).rejects.toThrow('the compiler stopped on this code');
    expect((await beside).outputFiles[0].text).toContain('beside: 2');
    expect((await compile('module.exports = 2;')).outputFiles[0].text).toContain('module.exports = 2');
  }, 60_000);
});
