import { Inject, Injectable, Logger } from '@nestjs/common';
import { assertRoomFor } from '../common/account-quota';
import { announceReplicaChange } from '../common/replica-changes';
import { softDeleteWithSubscriptions } from '../subscriptions/soft-delete';
import { retireSandboxesOf } from '../common/sandbox-retirement';
import { EntityManager, raw } from '@mikro-orm/postgresql';
import { ComponentMeta, ConfigurableProp, INTERFACE_HTTP, validateConfiguredProps } from '@app/component-model';
import { APP_CONFIG, AppConfig } from '@app/config';
import { BadRequestError, ConflictError, newEndpointKey, newId, NotFoundError } from '@app/contracts';
import { Component, Source } from '@app/db';
import { announceRoutes, NatsService } from '@app/nats';
import { announceAutoSubscribed, assertRoomForAutoSubscriptions, insertAutoSubscriptions } from '../subscriptions/auto-subscribe';
import { assertPathResource, AuthContext } from '../auth/auth.context';
import { COMPONENT_READER, ComponentReader } from '../components/component-reader';
import { ComponentsService, REGISTRY_OWNER, WITHOUT_CODE } from '../components/components.service';
import { addedProps, byStaticProps, hasDynamicProps, sandboxOf } from '../components/dynamic-props';
import { RegistrySeeder } from '../components/registry.seeder';
import { carriedProps, decryptProps, encryptProps, propsView, slugify, unmaskInput } from './source-props';
import { endpointUrlOf, SourcePublisher } from './source-publisher';
import { assertNoWorkflowTriggeredBy } from './trigger-source-guard';

/**
 * Which component a create or update uses: an id wins; code or a URL saves a new component; a key
 * (Pipedream's REST API example deploys `{"key": "rss-new-item-in-feed"}`) names a saved or registry one.
 */
export interface ComponentRef {
  componentId?: string;
  code?: string;
  url?: string;
  key?: string;
  /** Where a missing component was looked for (`details.in` of the 400 when none of them is given). */
  missingIn?: 'query' | 'body';
}

export interface SourceDto {
  id: string;
  user_id?: string;
  component_id: string;
  configured_props: Record<string, unknown>;
  active: boolean;
  created_at: number;
  updated_at: number;
  name: string;
  name_slug: string;
  /** Extension, for components with `additionalProps()`: the static props and those it returned for this source. */
  configurable_props?: ConfigurableProp[];
}

/** A source checked and not stored yet, with its component (`fresh`: made for it, stored with it). */
export interface PreparedSource {
  source: Source;
  component: Component;
  fresh: Component[];
}

/** Validated values (secrets encrypted) and the props `additionalProps()` added (null: the component has none). */
interface Validated {
  values: Record<string, unknown>;
  additional: ConfigurableProp[] | null;
}

@Injectable()
export class SourcesService {
  private readonly logger = new Logger('SourcesService');

  constructor(
    private readonly em: EntityManager,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly nats: NatsService,
    private readonly components: ComponentsService,
    private readonly publisher: SourcePublisher,
    @Inject(COMPONENT_READER) private readonly reader: ComponentReader,
    private readonly seeder: RegistrySeeder,
  ) {}

  toDto(source: Source, component: Component | undefined, withUser: boolean): SourceDto {
    const additional = (source.additionalProps ?? null) as ConfigurableProp[] | null;
    const props = [...((component?.configurableProps ?? []) as ConfigurableProp[]), ...(additional ?? [])];
    const dynamic = component !== undefined && hasDynamicProps(component);
    return {
      id: source.id,
      ...(withUser ? { user_id: source.userId } : {}),
      component_id: source.componentId,
      configured_props: propsView(props, source.configuredProps, endpointUrlOf(this.config, source.endpointKey)),
      active: source.active,
      created_at: source.createdAt,
      updated_at: source.updatedAt,
      name: source.name,
      name_slug: source.nameSlug,
      ...(dynamic ? { configurable_props: props } : {}),
    };
  }

  /**
   * The component a create or update names; an action is refused. One of the caller's from another namespace (their
   * own, for an org's source, or another org's) is saved again in the source's owner's, so that every member who can
   * reach the source can read and keep its component. An update may always keep the source's current component. A
   * component made now (from code, or such a copy) is `fresh`: not stored yet, it is stored with the source.
   */
  private async component(auth: AuthContext, ownerId: string, ref: ComponentRef, current?: string): Promise<{ component: Component; fresh: boolean }> {
    let component: Component;
    if (ref.componentId && ref.componentId === current) component = await this.components.findById(current, { code: false });
    else if (ref.componentId) component = await this.components.findForCaller(auth, ref.componentId, ownerId, { code: false });
    else if (!ref.code && !ref.url && ref.key) component = await this.componentByKey(auth, ownerId, ref.key);
    else {
      const resolved = await this.components.resolveCode(ownerId, ref.code, ref.url, ['component_id', 'component_code', 'component_url'], ref.missingIn);
      const field = ref.code ? 'component_code' : 'component_url';
      const accept = (a: { type: string }) => assertSource(a.type, `the ${field} component`, { field });
      return { component: await this.components.prepare(ownerId, auth.userId, resolved, undefined, accept), fresh: true };
    }
    assertSource(component.type, `component ${component.id}`, { component_id: component.id });
    if (component.id === current || component.ownerId === ownerId || component.ownerId === REGISTRY_OWNER) return { component, fresh: false };
    const whole = await this.components.withCode(component);
    const copy = await this.components.prepare(ownerId, auth.userId, { code: whole.code, url: whole.componentUrl ?? undefined, bundle: whole.bundle ?? undefined });
    return { component: copy, fresh: true };
  }

  /** The newest component with this key in the owner's namespace, else in the registry (waiting once for its seeding). */
  private async componentByKey(auth: AuthContext, ownerId: string, key: string): Promise<Component> {
    try {
      return await this.components.findForCaller(auth, key, ownerId, { code: false });
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e;
    }
    if (this.seeder.status === 'seeding') await this.seeder.settled(this.config.componentReadTimeoutMs * 2);
    try {
      return await this.components.findRegistry(key, { code: false });
    } catch (e) {
      if (e instanceof NotFoundError) throw NotFoundError.of('component', key, 'key');
      throw e;
    }
  }

  /**
   * Validates `configured_props`. A component with `additionalProps()` is validated in two steps, as
   * Pipedream configures it: the static props first; then `additionalProps()` runs in the owner's
   * sandbox (`sandboxOf`: the source's component is the owner's or the registry's) with their values as `this` (and, on an update, the props it added last time in
   * `previousPropDefs`), and the props it returns are validated (and defaulted) too.
   */
  private async validate(component: Component, input: unknown, ownerId: string, previous: ConfigurableProp[] = [], stored?: Record<string, unknown>): Promise<Validated> {
    const props = component.configurableProps as ConfigurableProp[];
    const values = (all: ConfigurableProp[]) => this.valuesFor(all, input, stored);
    if (!hasDynamicProps(component)) {
      return { values: encryptProps(props, validateConfiguredProps(props, values(props), this.config), this.config.secretsKey), additional: null };
    }
    const first = values(props);
    const given = first !== null && typeof first === 'object' && !Array.isArray(first) ? (first as Record<string, unknown>) : undefined;
    const staticValues = validateConfiguredProps(props, given ? byStaticProps(component, given).own : first, this.config);
    const additional = await addedProps(this.reader, this.config, await this.components.withCode(component), staticValues, { previous, account: sandboxOf(component, ownerId) });
    const all = [...props, ...additional];
    return { values: encryptProps(all, validateConfiguredProps(all, values(all), this.config), this.config.secretsKey), additional };
  }

  /**
   * The values to check against `props` (the source's props once created or updated): on an update (`stored`), absent
   * `configured_props` keep the stored values those props take, and a secret's mask sent back its stored value (on a
   * create there is none: refused). Both are read against the props the source ends up with, those
   * `additionalProps()` returns included, so a hidden value never lands in a prop that shows it.
   */
  private valuesFor(props: ConfigurableProp[], input: unknown, stored: Record<string, unknown> | undefined): unknown {
    if (stored && input === undefined) return carriedProps(props, stored, this.config.secretsKey);
    const given = input !== null && typeof input === 'object' && !Array.isArray(input);
    return given ? unmaskInput(props, input as Record<string, unknown>, stored ? decryptProps(stored, this.config.secretsKey) : {}) : input;
  }

  /** `base`, or `base-N` with the next free N among the owner's live sources. */
  private async freeSlug(em: EntityManager, ownerId: string, base: string, exceptId?: string): Promise<string> {
    const rows: { name_slug: string }[] = await em.execute(
      `select name_slug from sources where owner_id = ? and deleted_at is null and id <> ? and (name_slug = ? or name_slug ~ ?)`,
      [ownerId, exceptId ?? '', base, `^${base.replace(/[^a-z0-9-]/g, '')}-[0-9]+$`],
    );
    if (!rows.some((r) => r.name_slug === base)) return base;
    const taken = new Set(rows.map((r) => r.name_slug));
    let n = 1;
    while (taken.has(`${base}-${n}`)) n++;
    return `${base}-${n}`;
  }

  /**
   * Inserts with a unique slug, in `em`'s transaction (a workflow's create inserts its trigger source in its own). The
   * slug is chosen and inserted under a per-owner transaction lock, so concurrent creates for one owner (ten parallel
   * POSTs of one component) each get the next free number instead of racing for the same one. Whether it got
   * auto-subscriptions (to announce once committed: `announceCreated`).
   */
  async insertPrepared(em: EntityManager, { source, fresh }: PreparedSource): Promise<boolean> {
    // Its new component with it, or neither.
    await this.components.insert(em, fresh);
    await lockOwnerSlugs(em, source.ownerId);
    await assertRoomFor(em, 'sources', source.ownerId, this.config.sourcesMaxPerAccount);
    source.nameSlug = await this.freeSlug(em, source.ownerId, slugify(source.name));
    await em.persist(source).flush();
    // With the subscriptions its account's auto-subscriptions give it, or not at all (they count in the quota).
    return insertAutoSubscriptions(em, source, 'source', this.config.subscriptionsMaxPerAccount);
  }

  /** Once an inserted source is committed: its auto-subscriptions announced, its desired state published to the runner. */
  async announceCreated({ source, component }: PreparedSource, subscribed: boolean): Promise<void> {
    this.logger.log(`source created source_id=${source.id} owner_id=${source.ownerId} component_id=${component.id} type=${(component.meta as unknown as ComponentMeta).type}`);
    if (subscribed) await announceAutoSubscribed(this.nats, source);
    await this.publisher.publishSoon(source.id);
  }

  /**
   * Writes an update (revision + 1 in SQL, so concurrent updates each move it), with the source's new component
   * (`fresh`); a new name gets a unique slug. 404 when the source was deleted since it was read (nothing written).
   */
  private async writeUpdate(source: Source, newName: string | undefined, fresh: Component[]): Promise<void> {
    await this.components.storeRunnable(fresh);
    return this.em.fork().transactional(async (em) => {
      await this.components.insert(em, fresh);
      if (newName !== undefined) {
        await lockOwnerSlugs(em, source.ownerId);
        source.nameSlug = await this.freeSlug(em, source.ownerId, slugify(newName), source.id);
      }
      const updated = await em.nativeUpdate(
        Source,
        { id: source.id, deletedAt: null },
        {
          name: source.name,
          nameSlug: source.nameSlug,
          componentId: source.componentId,
          configuredProps: source.configuredProps,
          additionalProps: source.additionalProps ?? null,
          active: source.active,
          endpointKey: source.endpointKey,
          rev: raw('rev + 1'),
          updatedAt: Math.floor(Date.now() / 1000),
        },
      );
      if (!updated) throw NotFoundError.of('source', source.id);
    });
  }

  async create(auth: AuthContext, ownerId: string, ref: ComponentRef, name: string | undefined, configuredProps: unknown): Promise<{ source: Source; component: Component }> {
    const prepared = await this.prepare(auth, ownerId, ref, name, configuredProps);
    await this.components.storeRunnable(prepared.fresh);
    const subscribed = await this.em.fork().transactional((em) => this.insertPrepared(em, prepared));
    await this.announceCreated(prepared, subscribed);
    return prepared;
  }

  /**
   * A new source checked (quotas, component, props) and not stored yet: `create` stores it, or a workflow's create with
   * itself (`insertPrepared`), after `components.storeRunnable(fresh)`.
   */
  async prepare(auth: AuthContext, ownerId: string, ref: ComponentRef, name: string | undefined, configuredProps: unknown): Promise<PreparedSource> {
    // Refused before its code is read and saved; counted again, under the account's lock, when it is inserted.
    await assertRoomFor(this.em.fork(), 'sources', ownerId, this.config.sourcesMaxPerAccount);
    await assertRoomForAutoSubscriptions(this.em, ownerId, 'source', this.config.subscriptionsMaxPerAccount);
    const { component, fresh } = await this.component(auth, ownerId, ref);
    const { values, additional } = await this.validate(component, configuredProps, ownerId);
    const hasHttp = (component.configurableProps as ConfigurableProp[]).some((p) => p.type === INTERFACE_HTTP);
    const source = Object.assign(new Source(), {
      id: newId('source'),
      ownerId,
      userId: auth.userId,
      componentId: component.id,
      name: name ?? slugify(component.name),
      configuredProps: values,
      additionalProps: additional as Record<string, unknown>[] | null,
      active: true,
      rev: 1,
      publishedRev: 0,
      endpointKey: hasHttp ? newEndpointKey() : null,
      createdAtMs: Date.now(),
    });
    return { source, component, fresh: fresh ? [component] : [] };
  }

  async get(auth: AuthContext, id: string): Promise<{ source: Source; component: Component | undefined }> {
    const em = this.em.fork();
    const source = assertPathResource(auth, await em.findOne(Source, { id, deletedAt: null }), 'source', id);
    const component = ((await em.findOne(Component, { id: source.componentId }, WITHOUT_CODE)) as Component | null) ?? undefined;
    return { source, component };
  }

  async update(
    auth: AuthContext,
    id: string,
    change: { ref: ComponentRef; name?: string; configuredProps?: unknown; active: boolean },
    { byWorkflow = false } = {},
  ): Promise<{ source: Source; component: Component }> {
    const { source } = await this.get(auth, id);
    if (!byWorkflow) await assertNotManaged(this.em.fork(), source);
    // As the spec says, an update names its component too (the current one: `component_id` of the source).
    const { component, fresh: made } = await this.component(auth, source.ownerId, change.ref, source.componentId);
    // The props the source has now: the component's and those additionalProps() added last time.
    const previous = (source.additionalProps ?? []) as unknown as ConfigurableProp[];
    const props = [...(component.configurableProps as ConfigurableProp[]), ...previous];
    const validated = await this.validate(component, change.configuredProps, source.ownerId, previous, source.configuredProps);
    source.configuredProps = validated.values;
    source.additionalProps = validated.additional as Record<string, unknown>[] | null;
    source.componentId = component.id;
    source.active = change.active;
    const hasHttp = props.some((p) => p.type === INTERFACE_HTTP);
    const previousKey = source.endpointKey;
    source.endpointKey = hasHttp ? (source.endpointKey ?? newEndpointKey()) : null;
    if (change.name !== undefined) source.name = change.name;
    await this.writeUpdate(source, change.name, made ? [component] : []);
    this.logger.log(`source updated source_id=${source.id} active=${source.active}`);
    announceReplicaChange(this.nats, 'endpoints', [previousKey, source.endpointKey]);
    await this.publisher.publishSoon(source.id);
    const fresh = await this.em.fork().findOne(Source, { id: source.id, deletedAt: null });
    if (!fresh) throw NotFoundError.of('source', id);
    return { source: fresh, component };
  }

  /**
   * Marks deleted, bumps the revision, removes the desired state, then the row (the reconciler finishes an interrupted
   * delete), and retires the owner's sandbox processes on the runners (`retire`: unless the caller, deleting the
   * workflow that made it, retires them once for both).
   */
  async remove(auth: AuthContext, id: string, { byWorkflow = false, retire = true } = {}): Promise<void> {
    const { source } = await this.get(auth, id);
    if (!byWorkflow) await assertNotManaged(this.em.fork(), source);
    // Its subscriptions go with it, as emitter and as listener (auto-subscriptions too); delivery reloads its routes.
    // Not while a workflow names it as its trigger (checked with the row locked: a deploy naming it waits, then finds it deleted).
    if (!(await softDeleteWithSubscriptions(this.em, Source, source.id, (tx) => assertNoWorkflowTriggeredBy(tx, source)))) throw NotFoundError.of('source', id);
    await announceRoutes(this.nats, 'sources', { emitters: [{ emitter_id: source.id, owner_id: source.ownerId }], listeners: [source.id] });
    this.logger.log(`source deleted source_id=${source.id}`);
    announceReplicaChange(this.nats, 'endpoints', [source.endpointKey]);
    announceReplicaChange(this.nats, 'deleted', [source.id]);
    await this.publisher.publishSoon(source.id);
    // What still waits for it would only hold up its partition's other sources: gone (the runner acknowledges any that arrive later as unknown).
    await this.nats.purgeInvocations(source.id).catch((e: Error) => this.logger.warn(`purging the invocations of deleted source ${source.id} failed: ${e.message}`));
    if (retire) retireSandboxesOf(this.nats, source.ownerId, `source ${source.id}`, this.logger);
  }
}

/**
 * A source a workflow deployed for its trigger (stored `{ source: dc_…, managed: true }`) is changed and deleted by
 * that workflow's deploys and delete only (docs/workflows.md): changed directly, the next deploy would undo it;
 * deleted, the workflow would keep a trigger that never fires.
 */
async function assertNotManaged(em: EntityManager, source: Source): Promise<void> {
  const sql = `select id from workflows where owner_id = ? and deleted_at is null and trigger->>'source' = ? and trigger->>'managed' = 'true' limit 1`;
  const [workflow] = await em.getConnection().execute<{ id: string }[]>(sql, [source.ownerId, source.id]);
  if (!workflow) return;
  const message = `source ${source.id} is the trigger of workflow ${workflow.id}, which deployed it and manages it: change it with PUT /v1/workflows/${workflow.id} (trigger.source), or delete the workflow`;
  throw new ConflictError(message, { id: source.id, workflow_id: workflow.id });
}

/** Serializes slug allocation per owner until the surrounding transaction ends (the slug index is per owner). */
async function lockOwnerSlugs(em: EntityManager, ownerId: string): Promise<void> {
  await em.execute(`select pg_advisory_xact_lock(hashtext(?))`, [`source-slug:${ownerId}`]);
}

/** Only a source is deployed: an action is refused before anything of the request is stored. */
function assertSource(type: string, what: string, details: Record<string, unknown>): void {
  if (type === 'action') throw new BadRequestError(`${what} is an action; only sources can be deployed`, details, 'invalid_component');
}
