import { Inject, Injectable, Logger } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { analyzeComponent, AnalyzedComponent, ConfigurableProp } from '@app/component-model';
import { APP_CONFIG, AppConfig } from '@app/config';
import { BadRequestError, hasLoneSurrogate, newId, NotFoundError, RateLimitedError, sha256Hex } from '@app/contracts';
import { Component } from '@app/db';
import { lastTouchMs, NatsService, putSliced, rawObjectInfo, touchObject } from '@app/nats';
import { policyFromConfig, shownUrl } from '@app/net';
import { assertComponentBytesToday, MIN_SAVE_BYTES } from '../common/account-quota';
import { AuthContext, canAccess } from '../auth/auth.context';
import { COMPONENT_READER, ComponentReader } from './component-reader';
import { FetchPolicy, loadComponentUrl } from './component-url';

/** Code to save: the submitted (or fetched) code, its URL, and a bundle when the code is not self-contained. */
export interface ResolvedCode {
  code: string;
  url?: string;
  bundle?: string;
}

/** What a workflow's code step may leave out (Pipedream code steps carry no name or version). */
export interface DescriptorDefaults {
  name: string;
  version: string;
  type: 'action';
}

/** Owner id of the components shipped in `registry/` and published with the admin CLI. */
export const REGISTRY_OWNER = 'registry';

/** The spec's Component, as the API returns it. */
export interface ComponentDto {
  id: string;
  code: string;
  code_hash: string;
  name: string;
  version: string;
  key?: string;
  type: string;
  description?: string;
  configurable_props: ConfigurableProp[];
  component_url?: string;
  created_at: number;
  updated_at: number;
}

export function toComponentDto(c: Component): ComponentDto {
  return {
    id: c.id,
    code: c.code,
    code_hash: c.codeHash,
    name: c.name,
    version: c.version,
    ...(c.key ? { key: c.key } : {}),
    type: c.type,
    ...(c.description ? { description: c.description } : {}),
    configurable_props: c.configurableProps as ConfigurableProp[],
    ...(c.componentUrl ? { component_url: shownUrl(c.componentUrl) } : {}),
    created_at: c.createdAt,
    updated_at: c.updatedAt,
  };
}

/** The code the runner executes and its hash in the object store: the bundle when `code` is not self-contained. */
export function runnableOf(c: Component): { code: string; hash: string } {
  return c.bundle && c.bundleHash ? { code: c.bundle, hash: c.bundleHash } : { code: c.code, hash: c.codeHash };
}

/**
 * A read of components that leaves out their code and bundle (up to COMPONENT_MAX_BYTES each): what deciding about
 * a component, validating props against it and naming its runnable code (`runnableHashOf`) take. Its `code` and
 * `bundle` are then undefined; `runnableCode` or `ComponentsService.withCode` read them where they are needed. A
 * deploy of ten steps of 4 MB read 80 MB of code twice, and 24 at once ran an api of 160 MB heap out of memory.
 */
export const WITHOUT_CODE = { exclude: ['code', 'bundle'] as const };

/** The hash of the code the runner executes (`runnableOf`), from a component read with or without its code. */
export function runnableHashOf(c: Component): string {
  // A bundle and its hash are stored together (`buildComponent`).
  return c.bundleHash ?? c.codeHash;
}

/** The code the runner executes (`runnableOf`), read alone (the bundle or the code) for a component read `WITHOUT_CODE`. */
export async function runnableCode(em: EntityManager, c: Component): Promise<string> {
  if (typeof c.code === 'string') return runnableOf(c).code;
  const column = c.bundleHash ? 'bundle' : 'code';
  const [row] = await em.getConnection().execute<{ code: string }[]>(`select ${column} as code from components where id = ?`, [c.id]);
  if (typeof row?.code !== 'string') throw new Error(`component ${c.id} is gone`);
  return row.code;
}

/**
 * Runs the code in a worker (never on this thread) and validates what it exports.
 * Code over the size limit is a 400 naming the problem, like every other component rule (issue 3's list).
 */
export async function readComponent(reader: ComponentReader, config: AppConfig, code: string, account: string, defaults?: DescriptorDefaults): Promise<AnalyzedComponent> {
  const bytes = Buffer.byteLength(code, 'utf8');
  if (bytes > config.componentMaxBytes) {
    throw new BadRequestError(`component code is ${bytes} bytes; the limit is ${config.componentMaxBytes}`, { field: 'component_code', limit_bytes: config.componentMaxBytes }, 'invalid_component');
  }
  const out = await reader.describe(code, config.componentReadTimeoutMs, account);
  if (out.error?.name === 'InstallRefusedError') throw new RateLimitedError(out.error.message, out.error.retryAfterSeconds ?? 60);
  if (out.error || !out.descriptor) {
    const message = out.error?.message ?? 'the code exports no component';
    throw new BadRequestError(`cannot load the component: ${message}`, { reason: out.error?.name ?? 'Error' }, 'invalid_component');
  }
  const d = out.descriptor;
  const analyzed = analyzeComponent(defaults ? { ...d, name: d.name || defaults.name, version: d.version || defaults.version, type: d.type ?? defaults.type } : d);
  if (out.dependencyVersions && Object.keys(out.dependencyVersions).length) analyzed.meta.dependencyVersions = out.dependencyVersions;
  return analyzed;
}

/** A new component row (not yet persisted). */
export function buildComponent(analyzed: AnalyzedComponent, ownerId: string, userId: string | null, code: string, url?: string, bundle?: string): Component {
  return Object.assign(new Component(), {
    id: newId('component'),
    ownerId,
    userId,
    key: analyzed.key ?? null,
    name: analyzed.name,
    version: analyzed.version,
    type: analyzed.type,
    description: analyzed.description ?? null,
    code,
    codeHash: sha256Hex(code),
    componentUrl: url ? shownUrl(url) : null,
    bundle: bundle ?? null,
    bundleHash: bundle ? sha256Hex(bundle) : null,
    configurableProps: analyzed.configurableProps,
    meta: analyzed.meta as unknown as Record<string, unknown>,
    createdAtMs: Date.now(),
  });
}

/** Saved components: reading code (in a worker), validation, storage in Postgres and the object store. */
@Injectable()
export class ComponentsService {
  private readonly logger = new Logger('ComponentsService');
  /** Code hash → when this replica last stored or touched it. */
  private readonly touchedAt = new Map<string, number>();

  constructor(
    private readonly em: EntityManager,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly nats: NatsService,
    @Inject(COMPONENT_READER) private readonly reader: ComponentReader,
  ) {}

  fetchPolicy(account: string): FetchPolicy {
    return {
      account,
      policy: policyFromConfig(this.config),
      maxBytes: this.config.componentMaxBytes,
      timeoutMs: this.config.componentUrlTimeoutMs,
      maxRedirects: 5,
      maxFiles: 100,
    };
  }

  /**
   * The code to save: `component_code` when given (the URL is then only metadata), else
   * the file at `component_url` (plus a bundle when it imports relative files), its host looked up as `ownerId`'s.
   */
  async resolveCode(ownerId: string, code: string | undefined, url: string | undefined, required = ['component_code', 'component_url'], missingIn?: 'query' | 'body'): Promise<ResolvedCode> {
    if (code !== undefined && code !== '') return { code, url };
    if (url) return { ...(await loadComponentUrl(url, this.fetchPolicy(ownerId))), url };
    throw new BadRequestError(`${required.slice(0, -1).join(', ')} or ${required[required.length - 1]} is required`, { ...(missingIn ? { in: missingIn } : {}), fields: required });
  }

  analyze(code: string, account: string, defaults?: DescriptorDefaults): Promise<AnalyzedComponent> {
    return readComponent(this.reader, this.config, code, account, defaults);
  }

  /**
   * Reads, validates and saves a component in `ownerId`'s namespace; its runnable code goes to the object store.
   * `accept` may refuse what was read (by throwing) before anything is stored.
   */
  async save(
    ownerId: string,
    userId: string | null,
    resolved: ResolvedCode,
    em: EntityManager = this.em.fork(),
    defaults?: DescriptorDefaults,
    accept?: (analyzed: AnalyzedComponent) => void,
  ): Promise<Component> {
    const c = await this.prepare(ownerId, userId, resolved, defaults, accept);
    await this.storeRunnable([c]);
    await em.transactional((tx) => this.insert(tx, [c]));
    return c;
  }

  /**
   * Reads and validates a component for `ownerId`'s namespace, storing nothing: a source or workflow that needs it
   * stores it with itself (`storeRunnable`, then `insert` in its own transaction) once everything else is accepted.
   */
  async prepare(ownerId: string, userId: string | null, resolved: ResolvedCode, defaults?: DescriptorDefaults, accept?: (analyzed: AnalyzedComponent) => void): Promise<Component> {
    const { code, url, bundle } = resolved;
    const bytes = Buffer.byteLength(code) + (bundle === undefined ? 0 : Buffer.byteLength(bundle));
    // Refused before the code is read; counted again, under the account's lock, when it is inserted.
    await this.withinDailyBytes(this.em.fork(), ownerId, bytes);
    const analyzed = await this.analyze(bundle ?? code, ownerId, defaults);
    accept?.(analyzed);
    const c = buildComponent(analyzed, ownerId, userId, code, url, bundle);
    assertNoNulInComponent(c);
    return c;
  }

  /** Puts prepared components' runnable code into the object store (before their rows: the runner loads it from there). */
  async storeRunnable(components: Component[]): Promise<void> {
    for (const c of components) {
      const runnable = runnableOf(c);
      await this.storeCode(runnable.hash, runnable.code);
    }
  }

  /** Inserts prepared components of one owner in `tx`, counted against the account's daily component bytes. */
  async insert(tx: EntityManager, components: Component[]): Promise<void> {
    if (!components.length) return;
    // Counted with what was read from the code: a few hundred bytes of code may describe megabytes of props.
    await this.withinDailyBytes(tx, components[0].ownerId, components.reduce((n, c) => n + Math.max(savedBytes(c), MIN_SAVE_BYTES), 0));
    for (const c of components) {
      tx.persist(c);
      this.logger.log(`component saved component_id=${c.id} owner_id=${c.ownerId} key=${c.key ?? ''} code_hash=${c.codeHash}`);
    }
  }

  /** COMPONENT_BYTES_PER_DAY_PER_ACCOUNT, never under what one save's code may count (code and bundle at COMPONENT_MAX_BYTES). */
  private withinDailyBytes(em: EntityManager, ownerId: string, bytes: number): Promise<void> {
    const { componentBytesPerDayPerAccount: limit, componentMaxBytes } = this.config;
    return assertComponentBytesToday(em, ownerId, bytes, limit && Math.max(limit, 2 * componentMaxBytes, MIN_SAVE_BYTES));
  }

  /**
   * Puts the code into the `components` object store under its hash (idempotent); the runner loads it from there.
   * Code already stored is "touched" (its meta records now, compare-and-set) when its last touch is older than half
   * the garbage-collection grace period, so a collector never removes code a publish in flight is about to reference
   * (see ComponentGc). A touch this replica made within a quarter of the grace period is trusted without a round trip.
   * `code` may be a function reading it: it is called only when the store does not hold it yet.
   */
  async storeCode(codeHash: string, code: string | (() => Promise<string>)): Promise<void> {
    const now = Date.now();
    const grace = this.config.componentGcGraceMs;
    const mine = this.touchedAt.get(codeHash);
    if (mine !== undefined && now - mine < grace / 4) return;
    for (let attempt = 0; attempt < 5; attempt++) {
      const info = await rawObjectInfo(this.nats.components, codeHash);
      if (!info || info.deleted) {
        await putSliced(this.nats.components, codeHash, Buffer.from(typeof code === 'string' ? code : await code(), 'utf8'));
        break;
      }
      if (now - lastTouchMs(info) < grace / 2 || (await touchObject(this.nats.components, info, now))) break;
      if (attempt === 4) throw new Error(`could not store component code ${codeHash}: concurrent writers`);
    }
    this.touchedAt.set(codeHash, now);
    if (this.touchedAt.size > 10_000) this.touchedAt.delete(this.touchedAt.keys().next().value as string);
  }

  /** Forgets this replica's touch of removed code (the collector runs in this process). */
  forgetStored(codeHash: string): void {
    this.touchedAt.delete(codeHash);
  }

  /**
   * A component by `sc_` id (caller's namespaces or the registry) or by key in the given namespace; the newest version
   * wins. `{ code: false }` reads it `WITHOUT_CODE` (as `findById` and `findRegistry` do).
   */
  async findForCaller(auth: AuthContext, keyOrId: string, namespace: string, read: ComponentRead = {}): Promise<Component> {
    const em = this.em.fork();
    if (keyOrId.startsWith('sc_')) {
      const c = (await em.findOne(Component, { id: keyOrId }, readOptions(read))) as Component | null;
      if (c && (c.ownerId === REGISTRY_OWNER || canAccess(auth, c.ownerId))) return c;
      throw NotFoundError.of('component', keyOrId);
    }
    const c = (await em.findOne(Component, { ownerId: namespace, key: keyOrId }, { orderBy: { createdAtMs: 'desc', id: 'desc' }, ...readOptions(read) })) as Component | null;
    if (!c) throw NotFoundError.of('component', keyOrId, 'key');
    return c;
  }

  /** A component by id, whoever owns it (a source's own component). */
  async findById(id: string, read: ComponentRead = {}): Promise<Component> {
    const c = (await this.em.fork().findOne(Component, { id }, readOptions(read))) as Component | null;
    if (!c) throw NotFoundError.of('component', id);
    return c;
  }

  async findRegistry(key: string, read: ComponentRead = {}): Promise<Component> {
    const c = (await this.em.fork().findOne(Component, { ownerId: REGISTRY_OWNER, key }, { orderBy: { createdAtMs: 'desc', id: 'desc' }, ...readOptions(read) })) as Component | null;
    if (!c) throw NotFoundError.of('registry component', key, 'key');
    return c;
  }

  /** `c` with its code and bundle: itself when it was read with them, else read again whole. */
  async withCode(c: Component): Promise<Component> {
    return typeof c.code === 'string' ? c : this.findById(c.id);
  }
}

/** How a component is read: whole (by default) or, with `code: false`, `WITHOUT_CODE`. */
export interface ComponentRead {
  code?: boolean;
}

function readOptions(read: ComponentRead): typeof WITHOUT_CODE | Record<string, never> {
  return read.code === false ? WITHOUT_CODE : {};
}

/**
 * Postgres text and jsonb cannot hold NUL, and jsonb refuses a lone UTF-16 surrogate (text keeps U+FFFD instead):
 * code, name or props carrying one (`name: "a\\u0000"`, `label: String.fromCharCode(0xd800)`) are the author's error.
 * The request body cannot carry a lone surrogate (refused as it is read), but code makes one as it is read: the
 * insert failed (500) or what was answered was not what was kept.
 */
function assertNoNulInComponent(c: Component): void {
  // The code and the bundle (up to COMPONENT_MAX_BYTES each) are searched natively, not walked through JSON.stringify.
  const { code, bundle, ...rest } = c;
  let found = code.includes('\u0000') || !!bundle?.includes('\u0000');
  let lone = hasLoneSurrogate(code) || (typeof bundle === 'string' && hasLoneSurrogate(bundle));
  JSON.stringify(rest, (key: string, value: unknown) => {
    if (key.includes('\u0000') || (typeof value === 'string' && value.includes('\u0000'))) found = true;
    if (hasLoneSurrogate(key) || (typeof value === 'string' && hasLoneSurrogate(value))) lone = true;
    return value;
  });
  if (found) {
    throw new BadRequestError('the component contains a NUL character (\\u0000) in its code, name, key, description or props', { reason: 'nul_character' }, 'invalid_component');
  }
  if (lone) {
    throw new BadRequestError(
      'the component makes a lone UTF-16 surrogate (one half of a pair, \\ud800–\\udfff, alone) in its name, key, description, props or methods, which is not accepted',
      { reason: 'lone_surrogate' },
      'invalid_component',
    );
  }
}

/** The bytes a saved component's row holds, as COMPONENT_BYTES_PER_DAY_PER_ACCOUNT counts them (account-quota.ts). */
function savedBytes(c: Component): number {
  return (
    Buffer.byteLength(c.code) +
    (c.bundle ? Buffer.byteLength(c.bundle) : 0) +
    (c.description ? Buffer.byteLength(c.description) : 0) +
    Buffer.byteLength(JSON.stringify(c.configurableProps)) +
    Buffer.byteLength(JSON.stringify(c.meta))
  );
}
