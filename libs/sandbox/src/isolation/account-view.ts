import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, copyFile, link, mkdir, readFile, realpath, rename, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { checkRegistryOnly, INSTALLED_MARKER, type Marker } from '../npm-installer';
import { treeDigest } from '../tree-digest';
import type { BundleRef } from '../worker-protocol';

const run = promisify(execFile);

/**
 * A dependency set is handed to a sandbox only while its node_modules still match the digest recorded at install, and
 * only when every package in it came from the registry (a set installed by an earlier version may hold others).
 */
async function verifyDeps(dir: string): Promise<void> {
  await checkRegistryOnly(dir);
  const marker = JSON.parse(await readFile(join(dir, INSTALLED_MARKER), 'utf8')) as Marker;
  if (!marker.digest) return;
  if ((await treeDigest(join(dir, 'node_modules'))) !== marker.digest) {
    throw Object.assign(new Error(`the installed dependency set ${basename(dir)} does not match the digest recorded when it was installed: refused`), { name: 'IntegrityError' });
  }
}

/** A short, path-safe name for an account (directory names, socket paths). */
export function accountKey(account: string): string {
  return createHash('sha256').update(account).digest('hex').slice(0, 20);
}

/**
 * What one account's sandbox may read of the shared cache: hard links to the
 * bundles and dependency sets its own components use, under
 * `<npmCacheDir>/views/<accountKey>`. The shared cache itself (every account's
 * code) is never mounted into a sandbox. Hard links cost no copy; the files stay
 * read-only (owned by the app, mounted read-only).
 */
export class AccountView {
  private readonly made = new Map<string, Promise<string>>();

  /** `dir` is mounted at `inside` in the account's sandbox. */
  constructor(readonly dir: string, private readonly inside: string) {}

  /** The task's bundle reference rewritten to this view as the sandbox sees it (linked on first use). */
  async map(ref: BundleRef): Promise<BundleRef> {
    const [path, depsDir] = await Promise.all([this.once(ref.path, () => this.linkBundle(ref.path)), ref.depsDir ? this.once(ref.depsDir, () => this.linkDeps(ref.depsDir!)) : undefined]);
    const inside = (p: string) => this.inside + p.slice(this.dir.length);
    return { ...ref, path: inside(path), depsDir: depsDir && inside(depsDir) };
  }

  private once(key: string, make: () => Promise<string>): Promise<string> {
    let p = this.made.get(key);
    if (!p) {
      p = make();
      p.catch(() => this.made.delete(key));
      this.made.set(key, p);
    }
    return p;
  }

  private async linkBundle(path: string): Promise<string> {
    const dir = join(this.dir, 'bundles');
    await mkdir(dir, { recursive: true, mode: 0o755 });
    const target = join(dir, basename(path));
    for (const [src, dst] of [
      [path, target],
      [`${path}.map`, `${target}.map`],
    ]) {
      if (existsSync(dst) || !existsSync(src)) continue;
      await link(src, dst).catch(async (e: NodeJS.ErrnoException) => {
        if (e.code === 'EEXIST') return;
        await copyFile(src, dst);
        await chmod(dst, 0o444);
      });
    }
    return target;
  }

  private async linkDeps(depsDir: string): Promise<string> {
    const real = await realpath(depsDir);
    const target = join(this.dir, 'deps', basename(real));
    await verifyDeps(real);
    if (existsSync(target)) return target;
    await mkdir(join(this.dir, 'deps'), { recursive: true, mode: 0o755 });
    const tmp = `${target}.${process.pid}.${Date.now()}.tmp`;
    try {
      // Hard links where the file system allows them, else a copy.
      await run('cp', ['-al', real, tmp]).catch(() => run('cp', ['-a', real, tmp]));
      await rename(tmp, target).catch((e: NodeJS.ErrnoException) => {
        if (!existsSync(target)) throw e;
      });
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
    return target;
  }
}
