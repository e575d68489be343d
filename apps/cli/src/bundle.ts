import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { build, BuildFailure, Message, Metafile } from 'esbuild';
import { CliError } from './errors';
import { packagePins, pinImports } from './package-pins';

export interface Bundle {
  /** The code sent as `component_code` (a bundle ends with its inline source map). */
  code: string;
  /** Module format of the entry, kept in the bundle so the server reads it the same way. */
  format: 'esm' | 'cjs';
  /** Absolute paths of every local file the component is made of (entry first). */
  inputs: string[];
  /** False when the component is a single file sent unchanged. */
  bundled: boolean;
}

const RESOLVE_EXTENSIONS = ['.mjs', '.js', '.cjs', '.ts', '.mts', '.cts', '.json'];

/**
 * Bundles a local component: relative imports are inlined, npm packages (and
 * node builtins) stay external so the server installs them with their version
 * pins, and the entry's module format (ESM or CommonJS) is kept. An npm import
 * without a pin gets the range of the nearest package.json's `dependencies`
 * (package-pins.ts), as Node would load the version installed from it. A
 * component without local imports or such pins is sent as written.
 */
export async function bundleComponent(file: string, cwd = process.cwd()): Promise<Bundle> {
  const entry = resolve(cwd, file);
  if (!existsSync(entry)) throw new CliError(`file not found: ${file}`);
  if (statSync(entry).isDirectory()) throw new CliError(`${file} is a folder: name the component file in it (${file.replace(/[\\/]+$/, '')}/<name>/<name>.mjs)`);
  if (!statSync(entry).isFile()) throw new CliError(`${file} is not a file`);
  // Paths in the bundle's comments are relative to the entry's folder, not to where pd runs.
  const base = dirname(entry);
  const pins = packagePins(base);
  const first = await runBuild(entry, 'esm', base, pins);
  const format = entryFormat(first.metafile, entry, base);
  const inputs = localInputs(first.metafile, base, entry);
  if (inputs.length === 1 && !first.pinned) return { code: readFileSync(entry, 'utf8'), format, inputs, bundled: false };
  const result = format === 'esm' ? first : await runBuild(entry, 'cjs', base, pins);
  return { code: result.code, format, inputs, bundled: true };
}

async function runBuild(entry: string, format: 'esm' | 'cjs', cwd: string, pins: Map<string, string>): Promise<{ code: string; metafile: Metafile; pinned: number }> {
  const pinned = { count: 0 };
  try {
    const result = await build({
      plugins: [pinImports(pins, pinned)],
      entryPoints: [entry],
      absWorkingDir: cwd,
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      packages: 'external',
      format,
      target: 'node20',
      resolveExtensions: RESOLVE_EXTENSIONS,
      logLevel: 'silent',
      charset: 'utf8',
      legalComments: 'inline',
      // The server's bundler reads an inline map and chains its own to it: a step's error stack then names
      // its own files and lines (notify.mjs:5:11, relative to the entry's folder), not component.js:1:137.
      sourcemap: 'inline',
      sourcesContent: false,
      outfile: 'component.js',
    });
    const code = result.outputFiles.find((f) => f.path.endsWith('.js'))?.text ?? '';
    return { code, metafile: result.metafile, pinned: pinned.count };
  } catch (e) {
    throw new CliError(`cannot bundle ${entry}: ${describeBuildError(e)}`);
  }
}

function describeBuildError(e: unknown): string {
  const failure = e as Partial<BuildFailure>;
  const first: Message | undefined = failure.errors?.[0];
  if (!first) return (e as Error).message;
  const where = first.location ? `${first.location.file}:${first.location.line}:${first.location.column + 1}: ` : '';
  const more = (failure.errors?.length ?? 1) > 1 ? ` (and ${(failure.errors?.length ?? 1) - 1} more errors)` : '';
  return `${where}${first.text}${more}`;
}

function inputKey(metafile: Metafile, entry: string, cwd: string): string | undefined {
  return Object.keys(metafile.inputs).find((k) => !k.includes(':') && resolve(cwd, k) === entry);
}

function entryFormat(metafile: Metafile, entry: string, cwd: string): 'esm' | 'cjs' {
  const key = inputKey(metafile, entry, cwd);
  const format = key ? metafile.inputs[key].format : undefined;
  if (format) return format;
  // Neither import/export nor require seen: fall back to what the text says.
  return /\bexport\s+(default|\{)/.test(readFileSync(entry, 'utf8')) ? 'esm' : 'cjs';
}

/** Local files of the bundle (file namespace only), entry first. */
function localInputs(metafile: Metafile, cwd: string, entry: string): string[] {
  const files = Object.keys(metafile.inputs)
    .filter((k) => !/^[a-z-]+:/i.test(k))
    .map((k) => resolve(cwd, k));
  return [entry, ...files.filter((f) => f !== entry)];
}
