import { spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import { CliError } from './errors';

/** `npm:<package>[@<version>]/<path of a component file>`, e.g. `npm:@pipedream/helper_functions@0.3.13/actions/x/x.mjs`. */
const NPM_ACTION = /^npm:((?:@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*)(?:@([\w.^~<>=*-]+))?\/(.+\.(?:mjs|cjs|js|ts))$/i;

const INSTALL_TIMEOUT_MS = 120_000;

export function isNpmAction(ref: string): boolean {
  return ref.startsWith('npm:');
}

function run(cmd: string, args: string[], cwd: string): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'], shell: process.platform === 'win32' });
    let err = '';
    // npm retries an unreachable registry for minutes: give up with a clear message instead of hanging.
    const timer = setTimeout(() => child.kill('SIGKILL'), INSTALL_TIMEOUT_MS);
    child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', (e) => fail(new CliError(`cannot run npm: ${e.message}`)));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return done();
      if (signal === 'SIGKILL') return fail(new CliError(`npm install did not finish within ${INSTALL_TIMEOUT_MS / 1000} s (is the npm registry reachable?)`));
      fail(new CliError(`npm install failed (${code}): ${err.trim().split('\n').slice(-3).join(' ')}`));
    });
  });
}

/**
 * The local path of a component file inside a published npm package (Pipedream
 * publishes its registry components as `@pipedream/<app>` packages): the package
 * is installed once per name and version under `~/.cache/pd/npm` with npm itself
 * (no install scripts), then the file is bundled like a local one.
 */
export async function npmActionFile(ref: string): Promise<string> {
  const m = NPM_ACTION.exec(ref);
  if (!m) throw new CliError(`${ref}: an npm action is npm:<package>[@<version>]/<path to the component file>, e.g. npm:@pipedream/helper_functions@0.3.13/actions/base64-decode-string/base64-decode-string.mjs`);
  const [, name, version = 'latest', path] = m;
  const dir = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'pd', 'npm', `${name.replace('/', '+')}@${version}`);
  const pkgDir = join(dir, 'node_modules', ...name.split('/'));
  const file = resolve(pkgDir, path);
  if (!file.startsWith(pkgDir + sep)) throw new CliError(`${ref}: the path leaves the package`);
  if (!existsSync(file) || version === 'latest') {
    mkdirSync(dir, { recursive: true });
    await run('npm', ['install', '--prefix', dir, '--ignore-scripts', '--no-audit', '--no-fund', '--omit=dev', '--no-save', `${name}@${version}`], dir);
  }
  if (!existsSync(file)) throw new CliError(`${ref}: ${name}@${version} has no file ${path}`);
  return file;
}
