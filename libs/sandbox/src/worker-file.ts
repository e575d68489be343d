import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { buildSync } from 'esbuild';

/**
 * A script of the sandbox that runs in its own thread or process (the Piscina
 * worker, the sandbox host). From the build (dist) it is the `.js` file beside
 * its source; when running from TypeScript sources (jest, ts-node) it is
 * compiled once with esbuild into `node_modules/.cache/ess-sandbox` of the
 * project (so that its own imports, like piscina, resolve), keyed by its content.
 */
function cacheDir(): string {
  let dir = __dirname;
  while (!existsSync(join(dir, 'node_modules', 'piscina')) && dirname(dir) !== dir) dir = dirname(dir);
  // Its real path: the sandbox mounts node_modules where `require.resolve` finds it (a symlinked node_modules
  // resolves to its target), and refuses a script outside the mounts.
  const out = join(realpathSync(join(dir, 'node_modules')), '.cache', 'ess-sandbox');
  mkdirSync(out, { recursive: true });
  return out;
}

function resolveScript(relative: string): string {
  const js = join(__dirname, `${relative}.js`);
  if (existsSync(js)) return js;
  const ts = join(__dirname, `${relative}.ts`);
  const out = buildSync({
    entryPoints: [ts],
    bundle: true,
    write: false,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['esbuild', 'piscina'],
    logLevel: 'silent',
  });
  const text = out.outputFiles[0].text;
  const name = relative.replace(/\W/g, '-');
  const file = join(cacheDir(), `${name}-${createHash('sha256').update(text).digest('hex').slice(0, 16)}.js`);
  if (!existsSync(file)) {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, text);
    renameSync(tmp, file);
  }
  return file;
}

/** The Piscina worker script. */
export const resolveWorkerFile = (): string => resolveScript('worker');

/** The sandbox host process's entry. */
export const resolveHostFile = (): string => resolveScript('isolation/host-main');
