import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { bundleComponent } from './bundler';
import { NpmInstaller, dependencySetKey } from './npm-installer';
import { dependencyMap } from './specifiers';
import { forgetFailure, InstallRefusedError, type FetchText, type InstallAdmission, type SandboxLogger } from './types';
import type { BundleRef } from './worker-protocol';

export interface PreparedComponent {
  ref: BundleRef;
  /** npm imports as written. */
  dependencies: string[];
  /** name → exact installed version. */
  versions: Record<string, string>;
  /** The bundle text (for describe's `bundle` when modules were fetched). */
  bundle: string;
  fetchedModules: number;
}

export interface PrepareInput {
  code: string;
  baseUrl?: string;
  fetchText: FetchText;
  dependencyVersions?: Record<string, string>;
  /** Asked before npm installs a set this machine does not have (see NpmInstaller.install). */
  admitInstall?: InstallAdmission;
}

const FAILURE_RETRY_MS = 30_000;

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * Turns component code into a bundle file plus an installed dependency set,
 * once per key (concurrent callers share the work; failures are not cached).
 */
export class ComponentPreparer {
  private readonly cache = new Map<string, Promise<PreparedComponent>>();
  private readonly bundleDir: string;
  private readonly installer: NpmInstaller;
  private static readonly MAX_CACHED = 5000;

  constructor(opts: { npmCacheDir: string; npmRegistry?: string; installTimeoutMs: number; installMaxBytes?: number; logger?: SandboxLogger }) {
    this.bundleDir = join(opts.npmCacheDir, 'bundles');
    this.installer = new NpmInstaller({ cacheDir: opts.npmCacheDir, registry: opts.npmRegistry, timeoutMs: opts.installTimeoutMs, maxBytes: opts.installMaxBytes, logger: opts.logger });
  }

  /** `key` identifies the input (code hash, base URL, pinned versions); computed by the caller when it already knows it. */
  prepare(input: PrepareInput, key?: string): Promise<PreparedComponent> {
    const k = key ?? prepareKey(input);
    const hit = this.cache.get(k);
    // Another caller's install budget refused the one this joined: this caller asks its own.
    if (hit) return input.admitInstall ? hit.catch((e: unknown) => (e instanceof InstallRefusedError ? this.prepare(input, k) : Promise.reject(e))) : hit;
    const p = this.build(input);
    if (this.cache.size >= ComponentPreparer.MAX_CACHED) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(k, p);
    // Failures are kept briefly so that a broken component does not rebuild on every invocation.
    forgetFailure(this.cache, k, p, FAILURE_RETRY_MS);
    return p;
  }

  private async build(input: PrepareInput): Promise<PreparedComponent> {
    const out = await bundleComponent({ code: input.code, baseUrl: input.baseUrl, fetchText: input.fetchText });
    const deps = dependencyMap(out.dependencies);
    if (input.dependencyVersions) {
      for (const name of Object.keys(deps)) {
        const v = input.dependencyVersions[name];
        if (typeof v === 'string' && v) deps[name] = v;
      }
    }
    let depsDir: string | undefined;
    let versions: Record<string, string> = {};
    if (Object.keys(deps).length) {
      const installed = await this.installer.install(deps, input.admitInstall);
      depsDir = installed.dir;
      versions = installed.versions;
    }
    const bundleHash = sha(out.code).slice(0, 32);
    const path = join(this.bundleDir, `${bundleHash}.cjs`);
    if (!existsSync(path)) {
      await mkdir(this.bundleDir, { recursive: true });
      const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
      if (out.map) {
        await writeFile(`${tmp}.map`, out.map);
        await rename(`${tmp}.map`, `${path}.map`);
      }
      await writeFile(tmp, out.code);
      await rename(tmp, path);
    }
    const ref: BundleRef = { key: `${bundleHash}:${depsDir ? dependencySetKey(deps) : '-'}`, path, depsDir, format: out.format };
    return { ref, dependencies: out.dependencies, versions, bundle: out.code, fetchedModules: out.fetchedModules };
  }
}

const versionKeys = new WeakMap<object, string>();

/** The cache key of a preparation input. */
export function prepareKey(input: { code: string; baseUrl?: string; dependencyVersions?: Record<string, string>; codeHash?: string }): string {
  const v = input.dependencyVersions;
  let versions = '';
  if (v) {
    versions = versionKeys.get(v) ?? '';
    if (!versions) {
      versions = Object.keys(v)
        .sort()
        .map((n) => `${n}@${v[n]}`)
        .join(',');
      versionKeys.set(v, versions);
    }
  }
  return `${input.codeHash ?? sha(input.code)}|${input.baseUrl ?? ''}|${versions}`;
}
