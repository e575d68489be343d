import { createHash } from 'node:crypto';
import { build, stop, type BuildOptions, type BuildResult } from 'esbuild';

/** What esbuild's API answers once its compiler process has died. */
const STOPPED = /The service (was stopped|is no longer running)/;
/** Inputs that stopped the compiler on every try: refused at once, the most recent this many kept. */
const POISON_MAX = 1000;

export class CompilerStoppedError extends Error {
  override name = 'CompilerStoppedError';
}

let generation = 0;
const poisoned = new Set<string>();

/**
 * esbuild's `build`, surviving the death of its compiler. esbuild runs one long-lived compiler process per Node
 * process; code nested a few hundred thousand levels deep overflows its stack and ends it, and every later build
 * of every account then failed ("The service is no longer running") until the app was restarted. Now the
 * compiler is started again and the build tried once more: builds that were only in flight beside the culprit
 * go through; an input that stops the compiler again is refused (`CompilerStoppedError`), at once when sent
 * again. `key` names the input (the entry code and where its imports come from).
 */
export async function buildSurvivingCompilerDeath<T extends BuildOptions>(options: T, key: string): Promise<BuildResult<T>> {
  const id = createHash('sha256').update(key).digest('hex');
  if (poisoned.has(id)) throw stoppedOn();
  for (let attempt = 1; ; attempt++) {
    const started = generation;
    try {
      return (await build(options as BuildOptions)) as BuildResult<T>;
    } catch (e) {
      if (!STOPPED.test((e as Error).message ?? '')) throw e;
      // The first build to see the death starts a new compiler for everyone (`build` starts one when none runs).
      if (started === generation) {
        generation++;
        await stop();
      }
      if (attempt >= 2) {
        poisoned.add(id);
        if (poisoned.size > POISON_MAX) poisoned.delete(poisoned.values().next().value as string);
        throw stoppedOn();
      }
    }
  }
}

function stoppedOn(): CompilerStoppedError {
  return new CompilerStoppedError('the compiler stopped on this code (nested too deeply?); it was not saved');
}
