import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstat, mkdir, open, readdir, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { treeDigest } from './tree-digest';
import { forgetFailure, InstallRefusedError, type InstallAdmission, type SandboxLogger } from './types';

/** Written last into a dependency directory: its presence means the install finished. */
export const INSTALLED_MARKER = '.ess-installed.json';
const STALE_LOCK_MS = 10 * 60_000;
/** How often the size of a dependency set being installed is measured. */
const SIZE_CHECK_MS = 1000;
const FAILURE_RETRY_MS = 60_000;

export class DependencyInstallError extends Error {
  override name = 'DependencyInstallError';
}

export interface InstalledSet {
  /** Directory holding `node_modules`. */
  dir: string;
  /** name → exact installed version. */
  versions: Record<string, string>;
}

export interface Marker {
  requested: Record<string, string>;
  versions: Record<string, string>;
  /** treeDigest of node_modules right after the install: sandboxes get the set only while it still matches. */
  digest?: string;
}

export interface NpmInstallerOptions {
  cacheDir: string;
  registry?: string;
  timeoutMs: number;
  /** Largest dependency set on disk (NPM_INSTALL_MAX_MB); npm is stopped once the set passes it. */
  maxBytes?: number;
  logger?: SandboxLogger;
}

/** The cache key of a dependency set: SHA-256 of its sorted `name@range` specs. */
export function dependencySetKey(deps: Record<string, string>): string {
  const specs = Object.keys(deps)
    .sort()
    .map((n) => `${n}@${deps[n]}`);
  return createHash('sha256').update(specs.join('\n')).digest('hex').slice(0, 32);
}

/**
 * npm's ETARGET ("No matching version found for name@range."): the package and the range it could not
 * satisfy, as npm prints it (a dependency's range may hold spaces: `>=2 <3`, `^1 || ^2`).
 */
export function missingVersion(stderr: string): { name: string; range: string } | undefined {
  const m = /No matching version found for (@?[^@\s]+)@(.*?)\.?\s*$/m.exec(stderr);
  return m ? { name: m[1], range: m[2] } : undefined;
}

/**
 * The install error for npm's ETARGET, or undefined when `stderr` is another failure. The component is
 * named as the one asking only when it imports the package at the very range npm could not satisfy;
 * otherwise a dependency asked for it (a package the component imports unpinned, or at another range,
 * can still be pinned exactly by one of its dependencies).
 */
export function missingVersionError(stderr: string, deps: Record<string, string>): DependencyInstallError | undefined {
  const missing = missingVersion(stderr);
  if (!missing) return undefined;
  const spec = `${missing.name}@${missing.range}`;
  const asked = Object.prototype.hasOwnProperty.call(deps, missing.name) ? deps[missing.name] : undefined;
  const by =
    asked === missing.range
      ? `the component imports ${spec}`
      : `a dependency of the component asks for ${spec}${asked !== undefined ? ` (the component itself imports ${missing.name}@${asked})` : ''}`;
  return new DependencyInstallError(`the npm registry has no version of ${missing.name} matching "${missing.range}" (ETARGET): ${by}`);
}

/**
 * npm settings that keep every package of a dependency set a package of the registry: a package's own dependencies may name
 * a git repository, a tarball URL, a tarball file or a directory, and npm fetched them from the app's host — a URL of a
 * service only this machine reaches, a repository over the host's own credentials, a directory of the host — and the
 * component read what it got. npm without these settings ignores them; the installed tree is checked after it too.
 */
export const REGISTRY_ONLY_ARGS = ['--allow-git=none', '--allow-remote=none', '--allow-file=none', '--allow-directory=none'];

const SOURCE_KINDS: Record<string, string> = { GIT: 'git', REMOTE: 'remote', FILE: 'file', DIRECTORY: 'directory' };

const tooLargeError = (maxBytes: number) =>
  new DependencyInstallError(`the component's npm dependencies take more than ${Math.round(maxBytes / 1024 / 1024)} MiB on disk, the most NPM_INSTALL_MAX_MB allows: not installed`);

const notFromRegistry = (kind: string, spec?: string) =>
  new DependencyInstallError(`a dependency of the component is a ${kind} dependency${spec ? ` (${spec})` : ''}, not a package of the npm registry: only registry packages are installed`);

/** npm's refusal of a dependency that is not a registry package (EALLOWGIT, EALLOWREMOTE…), or undefined when `stderr` is another failure. */
export function refusedSourceError(stderr: string): DependencyInstallError | undefined {
  const code = /code EALLOW(GIT|REMOTE|FILE|DIRECTORY)\b/.exec(stderr);
  return code ? notFromRegistry(SOURCE_KINDS[code[1]], /Refusing to fetch "(.*)"/.exec(stderr)?.[1]) : undefined;
}

/** The installed tree holds only registry packages: no linked directory, nothing outside node_modules, no git or file source. */
export async function checkRegistryOnly(dir: string): Promise<void> {
  let packages: Record<string, { resolved?: unknown; link?: unknown }>;
  try {
    packages = (JSON.parse(await readFile(join(dir, 'node_modules', '.package-lock.json'), 'utf8')) as { packages?: typeof packages }).packages ?? {};
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return; // no package installed at all
    throw e;
  }
  for (const [path, pkg] of Object.entries(packages)) {
    const resolved = typeof pkg.resolved === 'string' ? pkg.resolved : '';
    const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    if (pkg.link || !path.startsWith('node_modules/')) throw notFromRegistry('directory', `${name}@${resolved || path}`);
    if (/^git/.test(resolved)) throw notFromRegistry('git', `${name}@${resolved}`);
    if (/^file:/.test(resolved)) throw notFromRegistry('file', `${name}@${resolved}`);
  }
}

/** A file or directory takes at least one block on disk (and an inode): a million empty files are not nothing. */
const BLOCK_BYTES = 4096;

/** What the entries under `dir` take on disk, each at least a block (links not followed; 0 when it is gone). */
export async function treeBytes(dir: string): Promise<number> {
  const entries = await readdir(dir, { recursive: true }).catch(() => [] as string[]);
  let total = 0;
  for (const e of entries) total += await lstat(join(dir, e)).then((st) => Math.max(st.size, BLOCK_BYTES), () => 0);
  return total;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Installs each dependency set once into `<cacheDir>/<key>/node_modules`
 * (`npm install --ignore-scripts`). Concurrent installs of one set are
 * serialised in-process by a promise and across processes (replicas sharing
 * the directory) by a lock file. The resolved versions are recorded beside it,
 * and the exact set is linked to the same directory so that a later install
 * by exact versions (another replica, `dependencyVersions`) is free.
 */
export class NpmInstaller {
  private readonly inflight = new Map<string, Promise<InstalledSet>>();

  constructor(private readonly opts: NpmInstallerOptions) {}

  /** `admit` is asked only when npm is about to run for a set not installed yet; joining another caller's install is free. */
  async install(deps: Record<string, string>, admit?: InstallAdmission): Promise<InstalledSet> {
    const key = dependencySetKey(deps);
    const joined = this.inflight.get(key);
    if (joined) {
      try {
        return await joined;
      } catch (e) {
        // Another caller's budget refused it: this caller asks its own.
        if (!(e instanceof InstallRefusedError)) throw e;
      }
    }
    let p = this.inflight.get(key);
    if (!p) {
      p = this.installOnce(key, deps, admit);
      this.inflight.set(key, p);
      // A failed set is retried after a pause, not on every invocation of its source.
      forgetFailure(this.inflight, key, p, FAILURE_RETRY_MS);
    }
    return p;
  }

  private async readMarker(dir: string): Promise<Marker | undefined> {
    try {
      return JSON.parse(await readFile(join(dir, INSTALLED_MARKER), 'utf8')) as Marker;
    } catch {
      return undefined;
    }
  }

  private async installOnce(key: string, deps: Record<string, string>, admit?: InstallAdmission): Promise<InstalledSet> {
    const dir = join(this.opts.cacheDir, key);
    const done = await this.readMarker(dir);
    if (done) return { dir, versions: done.versions };
    await mkdir(this.opts.cacheDir, { recursive: true });
    const lock = `${dir}.lock`;
    const owned = await this.acquire(lock, dir);
    try {
      const again = await this.readMarker(dir);
      if (again) return { dir, versions: again.versions };
      admit?.(deps);
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'ess-component-deps', private: true, dependencies: deps }, null, 2));
      const started = Date.now();
      try {
        await this.runNpm(dir, deps);
        await checkRegistryOnly(dir);
        if (this.opts.maxBytes && (await treeBytes(dir)) > this.opts.maxBytes) throw tooLargeError(this.opts.maxBytes);
      } catch (e) {
        // Nothing of a refused set stays on disk.
        await rm(dir, { recursive: true, force: true });
        throw e;
      }
      const versions: Record<string, string> = {};
      for (const name of Object.keys(deps)) {
        const pkg = JSON.parse(await readFile(join(dir, 'node_modules', name, 'package.json'), 'utf8')) as { version: string };
        versions[name] = pkg.version;
      }
      const marker: Marker = { requested: deps, versions, digest: await treeDigest(join(dir, 'node_modules')) };
      await writeFile(join(dir, `${INSTALLED_MARKER}.tmp`), JSON.stringify(marker));
      await rename(join(dir, `${INSTALLED_MARKER}.tmp`), join(dir, INSTALLED_MARKER));
      this.opts.logger?.info({ deps, versions, ms: Date.now() - started }, 'installed component dependencies');
      await this.linkExact(dir, versions);
      return { dir, versions };
    } finally {
      if (owned) await rm(lock, { force: true });
    }
  }

  /** Makes the exact-version set of `versions` resolve to `dir` (no second install). */
  private async linkExact(dir: string, versions: Record<string, string>): Promise<void> {
    const exact = join(this.opts.cacheDir, dependencySetKey(versions));
    if (exact === dir) return;
    try {
      await symlink(dir, exact, 'dir');
    } catch {
      // Already present (installed or linked by someone else): fine.
    }
  }

  /** True when this process now holds the lock; false when another finished the install meanwhile. */
  private async acquire(lock: string, dir: string): Promise<boolean> {
    const deadline = Date.now() + this.opts.timeoutMs + STALE_LOCK_MS;
    for (;;) {
      try {
        const fh = await open(lock, 'wx');
        await fh.writeFile(String(process.pid));
        await fh.close();
        return true;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      if (await this.readMarker(dir)) return false;
      try {
        const st = await stat(lock);
        if (Date.now() - st.mtimeMs > STALE_LOCK_MS) await rm(lock, { force: true });
      } catch {
        // lock vanished between open and stat: retry
      }
      if (Date.now() > deadline) throw new DependencyInstallError('timed out waiting for another install of the same dependencies');
      await sleep(200);
    }
  }

  private runNpm(dir: string, deps: Record<string, string>): Promise<void> {
    const args = ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--omit=dev', '--no-update-notifier', '--loglevel=error', ...REGISTRY_ONLY_ARGS];
    if (this.opts.registry) args.push(`--registry=${this.opts.registry}`);
    return new Promise((resolve, reject) => {
      const child = spawn(process.platform === 'win32' ? 'npm.cmd' : 'npm', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        stderr = (stderr + d.toString()).slice(-4000);
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), this.opts.timeoutMs);
      // A package anyone can publish may unpack to gigabytes: the disk is the one NATS and the other accounts' sets use.
      let tooLarge = false;
      let measuring = false;
      const max = this.opts.maxBytes;
      const sizeCheck = max
        ? setInterval(() => {
            if (measuring) return;
            measuring = true;
            void treeBytes(dir).then((bytes) => {
              measuring = false;
              if (bytes > max && !tooLarge) {
                tooLarge = true;
                child.kill('SIGKILL');
              }
            });
          }, SIZE_CHECK_MS)
        : undefined;
      child.on('error', (e) => {
        clearTimeout(timer);
        clearInterval(sizeCheck);
        reject(new DependencyInstallError(`npm could not start: ${e.message}`));
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        clearInterval(sizeCheck);
        if (tooLarge) return reject(tooLargeError(max!));
        if (code === 0) return resolve();
        const missing = missingVersionError(stderr, deps) ?? refusedSourceError(stderr);
        if (missing) return reject(missing);
        const why = signal ? `killed (${signal}) after ${this.opts.timeoutMs} ms` : `exit code ${code}`;
        const detail = stderr
          .split('\n')
          .filter((l) => /ERR!|error/i.test(l))
          .slice(0, 6)
          .join(' ')
          .replace(/\s+/g, ' ')
          .trim();
        reject(new DependencyInstallError(`npm install failed (${why})${detail ? `: ${detail}` : ''}`));
      });
    });
  }
}
