import { existsSync, readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { EntityManager } from '@mikro-orm/postgresql';
import { loadConfig } from '@app/config';
import { Component } from '@app/db';
import { publishToRegistry, registryDir, seedRegistry, underRegistryLock } from './registry';
import { REGISTRY_OWNER } from './components.service';
import { SandboxComponentReader } from './sandbox-component-reader';
import { UsageError } from '../admin/usage-error';

type Command = (flags: Record<string, string>, em: EntityManager, positional: string[]) => Promise<unknown>;

/** Operator commands of the component registry (registered in the admin CLI). */
export const REGISTRY_COMMANDS: Record<string, Command> = {
  /** `registry publish <file>`: publishes one component file to the global registry. */
  'registry publish': async (flags, em, positional) => {
    const file = positional[0] ?? flags.file;
    if (!file) throw new UsageError('usage: registry publish <file>');
    const code = readFileSync(resolve(file), 'utf8');
    const config = loadConfig();
    const reader = await SandboxComponentReader.create(config);
    const { component, created } = await underRegistryLock(em, (tx) => publishToRegistry(tx, reader, config, code)).finally(() => reader.close());
    return { id: component.id, key: component.key, version: component.version, name: component.name, code_hash: component.codeHash, created };
  },
  /** `registry seed [--dir <dir>]`: publishes every shipped component (the api also does this at start). */
  'registry seed': async (flags, em) => {
    // registryFiles() reads a missing directory as an empty registry: a mistyped --dir would "succeed" publishing nothing.
    if (flags.dir !== undefined) {
      if (!flags.dir) throw new UsageError('usage: registry seed [--dir <dir>] (--dir needs a directory)');
      const given = resolve(flags.dir);
      if (!existsSync(given) || !statSync(given).isDirectory()) throw new Error(`--dir must be a directory of component files, got "${flags.dir}" (${given} is not a directory)`);
    }
    const config = loadConfig();
    const dir = flags.dir ? resolve(flags.dir) : registryDir(config);
    if (!dir) return { published: [] };
    const reader = await SandboxComponentReader.create(config);
    const results = await seedRegistry(em, reader, config, dir).finally(() => reader.close());
    const failed = results.filter((r) => r.error);
    if (failed.length) throw new Error(failed.map((r) => `${r.file}: ${r.error}`).join('\n'));
    return { published: results.map((r) => ({ key: r.key, created: r.created })) };
  },
  /** `registry list`: the newest version of every registry key. */
  'registry list': async (_flags, em) => {
    const rows = await em.find(Component, { ownerId: REGISTRY_OWNER }, { orderBy: { key: 'asc', createdAtMs: 'desc' } });
    const newest = new Map<string, Component>();
    for (const r of rows) if (r.key && !newest.has(r.key)) newest.set(r.key, r);
    return { components: [...newest.values()].map((c) => ({ id: c.id, key: c.key, version: c.version, name: c.name })) };
  },
};
