import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { EntityManager } from '@mikro-orm/postgresql';
import { AppConfig, ConfigError } from '@app/config';
import { BadRequestError, clipped, ConflictError, sha256Hex } from '@app/contracts';
import { Component } from '@app/db';
import { slugify } from '../sources/source-props';
import { ComponentReader } from './component-reader';
import { buildComponent, readComponent, REGISTRY_OWNER } from './components.service';

const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
const REGISTRY_KEY = /^[a-z0-9]+(?:_[a-z0-9]+)*(?:-[a-z0-9]+)+$/;

/** Where the shipped registry lives: REGISTRY_DIR (which must be a directory), else `registry/components` of the install. */
export function registryDir(config: Pick<AppConfig, 'registryDir'>): string | undefined {
  if (config.registryDir === 'off') return undefined;
  if (config.registryDir) {
    const dir = resolve(config.registryDir);
    if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new ConfigError(`REGISTRY_DIR must be a directory of component files (or "off"), got "${config.registryDir}" (${dir} is not a directory)`);
    return dir;
  }
  // dist/apps/api/src/components → the install root
  return join(__dirname, '..', '..', '..', '..', '..', 'registry', 'components');
}

export interface PublishResult {
  component: Component;
  /** False when this exact code was already published under its key. */
  created: boolean;
}

/**
 * Publishes a component to the global registry. Registry components need a
 * `key` (`<app>-<component-name>`, unique across the registry) and a semantic
 * `version`; re-publishing identical code is a no-op, and a version may not be
 * re-used with different code. The runner gets the code from the object store,
 * which the api fills when a source first uses it.
 */
export async function publishToRegistry(em: EntityManager, reader: ComponentReader, config: AppConfig, code: string): Promise<PublishResult> {
  const analyzed = await readComponent(reader, config, code, REGISTRY_OWNER);
  if (!analyzed.key) throw new BadRequestError('a registry component needs a key', { field: 'key' }, 'invalid_component');
  if (!REGISTRY_KEY.test(analyzed.key)) throw new BadRequestError(`registry key "${analyzed.key}" must look like <app_name_slug>-<slugified-component-name> (lowercase letters, digits and dashes)`, { field: 'key' }, 'invalid_component');
  const nameSlug = slugify(analyzed.name);
  const app = analyzed.key.slice(0, analyzed.key.indexOf('-'));
  if (analyzed.key !== `${app}-${nameSlug}`) {
    throw new BadRequestError(`registry key "${analyzed.key}" must be <app_name_slug>-<slugified-component-name>: ${app}-${nameSlug} for the name "${clipped(analyzed.name)}"`, { field: 'key', expected: `${app}-${nameSlug}` }, 'invalid_component');
  }
  if (!SEMVER.test(analyzed.version)) throw new BadRequestError(`registry components need a semantic version (x.y.z), got "${analyzed.version}"`, { field: 'version' }, 'invalid_component');
  const codeHash = sha256Hex(code);
  const same = await em.findOne(Component, { ownerId: REGISTRY_OWNER, key: analyzed.key, version: analyzed.version }, { orderBy: { createdAtMs: 'desc' } });
  if (same && same.codeHash === codeHash) return { component: same, created: false };
  if (same) throw new ConflictError(`registry component ${analyzed.key} version ${analyzed.version} is already published with different code; bump the version`, { key: analyzed.key, version: analyzed.version });
  const c = buildComponent(analyzed, REGISTRY_OWNER, null, code);
  await em.persist(c).flush();
  return { component: c, created: true };
}

/**
 * Runs `work` in a transaction holding the registry's advisory lock, so publishers take turns (the seeds of
 * several api replicas, `registry publish` beside them): two publishing one key and version at once would
 * otherwise both find it unpublished and both insert it.
 */
export async function underRegistryLock<T>(em: EntityManager, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  return em.transactional(async (tx) => {
    // tx.execute runs in the transaction (getConnection().execute would take another pooled connection, releasing the lock at once).
    // Waiting for another replica's seed (npm installs) may take longer than DB_STATEMENT_TIMEOUT_MS, meant for requests.
    await tx.execute(`set local statement_timeout = 0`);
    await tx.execute(`select pg_advisory_xact_lock(hashtext('registry-seed'))`);
    return work(tx);
  });
}

/** The component files of a registry directory (`*.js`, `*.mjs`, `*.cjs`), sorted. */
export function registryFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => /\.(m|c)?js$/.test(f))
    .sort()
    .map((f) => join(dir, f));
}

export interface SeedResult {
  file: string;
  key?: string;
  created: boolean;
  error?: string;
}

/** Publishes every shipped registry component (idempotent; one api replica at a time through an advisory lock). A bad file is reported, not fatal; `stopped` aborts (rolls back) between files. */
export async function seedRegistry(em: EntityManager, reader: ComponentReader, config: AppConfig, dir: string, stopped: () => boolean = () => false): Promise<SeedResult[]> {
  const files = registryFiles(dir);
  if (!files.length) return [];
  return underRegistryLock(em, async (tx) => {
    const out: SeedResult[] = [];
    for (const file of files) {
      if (stopped()) throw new Error('seeding stopped (shutting down)');
      try {
        const { component, created } = await publishToRegistry(tx, reader, config, readFileSync(file, 'utf8'));
        out.push({ file, key: component.key ?? undefined, created });
      } catch (e) {
        out.push({ file, created: false, error: (e as Error).message });
      }
    }
    return out;
  });
}
