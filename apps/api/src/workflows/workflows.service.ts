import { Inject, Injectable, Logger } from '@nestjs/common';
import { assertRoomFor } from '../common/account-quota';
import { announceReplicaChange } from '../common/replica-changes';
import { EntityManager, raw } from '@mikro-orm/postgresql';
import { ConfigurableProp, readWorkflowDefinition, SECRET_NAME, secretNamesOf, WorkflowDefinition, WorkflowDefinitionError } from '@app/component-model';
import { APP_CONFIG, AppConfig } from '@app/config';
import { BadRequestError, clipped, ConflictError, encryptValue, newEndpointKey, newId, NotFoundError } from '@app/contracts';
import { Component, Subscription, Workflow } from '@app/db';
import { announceRoutes, NatsService } from '@app/nats';
import { announceAutoSubscribed, assertRoomForAutoSubscriptions, insertAutoSubscriptions } from '../subscriptions/auto-subscribe';
import { assertPathResource, AuthContext } from '../auth/auth.context';
import { COMPONENT_READER, ComponentReader } from '../components/component-reader';
import { ComponentsService } from '../components/components.service';
import { propsView } from '../sources/source-props';
import { resolveEmitter } from '../subscriptions/endpoints';
import { softDeleteWithSubscriptions } from '../subscriptions/soft-delete';
import { retireSandboxesOf } from '../common/sandbox-retirement';
import { lockTriggerSource } from '../sources/trigger-source-guard';
import { ComponentRef, PreparedSource, SourcesService } from '../sources/sources.service';
import { resolveSteps, StepsDeps } from './workflow-steps';
import { WorkflowPublisher } from './workflow-publisher';

/** Rounds a deploy starts again when other deploys of the same workflow are stored while it runs, before it answers 409. */
const DEPLOY_ROUNDS = 5;

export interface WorkflowDto {
  id: string;
  owner_id: string;
  user_id: string;
  name: string;
  active: boolean;
  deployment_id: string;
  trigger: Record<string, unknown>;
  steps: { name: string; cell_id: string; component_id: string; code?: true; action?: string; props: Record<string, unknown> }[];
  settings: Record<string, unknown>;
  /** Names of the secrets set (values are never returned). */
  secrets: string[];
  created_at: number;
  updated_at: number;
}

/** The fields of a create or update besides the definition. */
export interface WorkflowExtras {
  secrets?: Record<string, unknown>;
  active?: boolean;
}

/** Workflows (an extension): definitions, their steps as saved components, trigger subscriptions, publishing to the runner. */
@Injectable()
export class WorkflowsService {
  private readonly logger = new Logger('WorkflowsService');

  constructor(
    private readonly em: EntityManager,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly nats: NatsService,
    private readonly components: ComponentsService,
    private readonly publisher: WorkflowPublisher,
    private readonly sources: SourcesService,
    @Inject(COMPONENT_READER) private readonly reader: ComponentReader,
  ) {}

  private get stepsDeps(): StepsDeps {
    return { components: this.components, reader: this.reader, config: this.config };
  }

  toDto(w: Workflow, components: Map<string, Component>): WorkflowDto {
    const trigger: Record<string, unknown> = { ...w.trigger };
    if (w.endpointKey) trigger.endpoint_url = this.publisher.endpointUrl(w.endpointKey);
    return {
      id: w.id,
      owner_id: w.ownerId,
      user_id: w.userId,
      name: w.name,
      active: w.active,
      deployment_id: w.deploymentId,
      trigger,
      steps: w.steps.map((s) => ({
        name: s.name,
        cell_id: s.cellId,
        component_id: s.componentId,
        ...(s.kind === 'code' ? { code: true as const } : { action: s.action }),
        props: propsView([...((components.get(s.componentId)?.configurableProps ?? []) as ConfigurableProp[]), ...((s.additionalProps ?? []) as unknown as ConfigurableProp[])], s.props, undefined),
      })),
      settings: w.settings,
      secrets: Object.keys(w.secrets).sort(),
      created_at: w.createdAt,
      updated_at: w.updatedAt,
    };
  }

  /**
   * The props of the steps' components, which answers show (`toDto`): only those are read. A page of 100 workflows of
   * 50 steps names up to 5,000 components of up to COMPONENT_MAX_BYTES of code each, which every GET read whole.
   */
  async componentsOf(workflows: Workflow[]): Promise<Map<string, Component>> {
    const ids = [...new Set(workflows.flatMap((w) => w.steps.map((s) => s.componentId)))];
    const rows = ids.length ? ((await this.em.fork().find(Component, { id: { $in: ids } }, { fields: ['id', 'configurableProps'] })) as Component[]) : [];
    return new Map(rows.map((c) => [c.id, c]));
  }

  private definition(input: unknown): WorkflowDefinition {
    try {
      const def = readWorkflowDefinition(input, ['secrets', 'active']);
      const min = this.config.timerMinIntervalSeconds;
      if ('timer' in def.trigger && 'intervalSeconds' in def.trigger.timer && def.trigger.timer.intervalSeconds < min) {
        throw new WorkflowDefinitionError('trigger.timer.intervalSeconds', `must be at least ${min} (TIMER_MIN_INTERVAL_SECONDS)`);
      }
      return def;
    } catch (e) {
      if (e instanceof WorkflowDefinitionError) throw new BadRequestError(e.message, { path: e.path }, 'invalid_workflow');
      throw e;
    }
  }

  /** Secret values given now (encrypted), merged over the stored ones; every `{{secrets.NAME}}` used must be set. */
  private secrets(def: WorkflowDefinition, given: unknown, stored: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = { ...stored };
    if (given !== undefined && given !== null) {
      if (typeof given !== 'object' || Array.isArray(given)) throw new BadRequestError('secrets: must be an object of NAME: value', { path: 'secrets' }, 'invalid_workflow');
      for (const [name, value] of Object.entries(given)) {
        // `__proto__` would set the object's prototype instead of storing a secret.
        if (!SECRET_NAME.test(name) || name === '__proto__') throw new BadRequestError(`secrets.${clipped(name)}: a secret name is letters, digits and _ (at most 128)`, { path: `secrets.${clipped(name)}` }, 'invalid_workflow');
        if (value === null) delete out[name];
        else if (typeof value !== 'string') throw new BadRequestError(`secrets.${name}: must be a string (or null to remove it)`, { path: `secrets.${name}` }, 'invalid_workflow');
        else out[name] = encryptValue(this.config.secretsKey, value);
      }
    }
    const missing = secretNamesOf(def).filter((n) => !Object.prototype.hasOwnProperty.call(out, n));
    if (missing.length) throw new BadRequestError(`secrets.${missing[0]}: used as {{secrets.${missing[0]}}} but not set`, { path: `secrets.${missing[0]}`, missing }, 'invalid_workflow');
    return out;
  }

  /**
   * The trigger as stored. An inline source (`{ source: { code | component_id | key, props } }`) is stored as
   * `{ source: dc_…, managed: true }`: the one deployed for this workflow before is updated now; a new one is only
   * checked (`pending`), and stored in the workflow's own transaction, so a workflow not stored leaves none behind.
   */
  private async triggerRow(auth: AuthContext, ownerId: string, def: WorkflowDefinition, previous?: Workflow): Promise<{ trigger: Record<string, unknown>; pending?: PreparedSource }> {
    const t = def.trigger;
    if (!('source' in t) || typeof t.source === 'string') return { trigger: t as unknown as Record<string, unknown> };
    const inline = t.source;
    const managed = managedSourceOf(previous?.trigger);
    const named = inline.component_id ?? inline.key;
    try {
      const ref: ComponentRef = inline.component_id ? { componentId: inline.component_id } : inline.key ? { componentId: await this.keyToId(auth, ownerId, inline.key) } : { code: inline.code };
      if (managed) {
        try {
          const { source } = await this.sources.update(auth, managed, { ref, configuredProps: inline.props, active: true }, { byWorkflow: true });
          return { trigger: { source: source.id, managed: true } };
        } catch (e) {
          // Gone (deleted through DELETE /v1/sources/{id} before that refused a workflow's source): this deploy makes a new one.
          if (!(e instanceof NotFoundError && (e.details as { id?: unknown } | undefined)?.id === managed)) throw e;
        }
      }
      const pending = await this.sources.prepare(auth, ownerId, ref, `${def.name} trigger`, inline.props);
      return { trigger: { source: pending.source.id, managed: true }, pending };
    } catch (e) {
      // The component named (by any length of key or id) is quoted `clipped`.
      if (e instanceof NotFoundError && named !== undefined) throw new BadRequestError(`trigger.source: component ${clipped(named)} not found`, { path: 'trigger.source', [inline.component_id ? 'id' : 'key']: clipped(named) }, 'invalid_workflow');
      if (e instanceof BadRequestError || e instanceof NotFoundError) throw new BadRequestError(`trigger.source: ${e.message}`, { path: 'trigger.source', ...(e.details ?? {}) }, 'invalid_workflow');
      throw e;
    }
  }

  /** A component key in the owner's namespace, else in the registry, as an `sc_…` id. */
  private async keyToId(auth: AuthContext, ownerId: string, key: string): Promise<string> {
    try {
      return (await this.components.findForCaller(auth, key, ownerId, { code: false })).id;
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e;
      return (await this.components.findRegistry(key, { code: false })).id;
    }
  }

  /**
   * Removes the source deployed for a workflow's trigger (`replaced`) when the trigger (`now`) no longer uses it;
   * `retire: false` when the workflow's deletion retires the account's sandbox processes for both.
   */
  private async dropManagedSource(auth: AuthContext, replaced: Record<string, unknown> | undefined, now: Record<string, unknown> | null, retire = true): Promise<void> {
    const managed = managedSourceOf(replaced);
    if (!managed || (now && now.source === managed)) return;
    await this.sources.remove(auth, managed, { byWorkflow: true, retire }).catch((e: Error) => this.logger.warn(`removing trigger source ${managed} failed: ${e.message}`));
  }

  async create(auth: AuthContext, ownerId: string, body: Record<string, unknown>): Promise<Workflow> {
    const def = this.definition(body);
    const em = this.em.fork();
    if (await em.findOne(Workflow, { ownerId, name: def.name, deletedAt: null })) {
      throw new ConflictError(`a workflow named "${clipped(def.name)}" already exists: update it with PUT /v1/workflows/{id}`, { name: clipped(def.name) });
    }
    // Refused before its trigger source is deployed; counted again, under the account's lock, when it is inserted.
    await assertRoomFor(em, 'workflows', ownerId, this.config.workflowsMaxPerAccount);
    // The workflow, and an inline trigger source, each get the account's auto-subscriptions.
    await assertRoomForAutoSubscriptions(em, ownerId, 'workflow', this.config.subscriptionsMaxPerAccount, 'source' in def.trigger && typeof def.trigger.source !== 'string' ? 2 : 1);
    const secrets = this.secrets(def, body.secrets, {});
    const { rows, components, fresh } = await resolveSteps(this.stepsDeps, em, auth, ownerId, def.steps);
    await this.checkTriggerEmitter(auth, ownerId, def.trigger);
    const w = Object.assign(new Workflow(), {
      id: newId('workflow'),
      ownerId,
      userId: auth.userId,
      name: def.name,
      deploymentId: newId('deployment'),
      trigger: storedTriggerShape(def),
      steps: rows,
      settings: def.settings as Record<string, unknown>,
      secrets,
      active: body.active !== false,
      endpointKey: 'http' in def.trigger ? newEndpointKey() : null,
      createdAtMs: Date.now(),
    });
    // Before its trigger source is checked: a refused definition reads no component for it.
    this.publisher.assertFits(w, components);
    const { trigger, pending } = await this.triggerRow(auth, ownerId, def);
    w.trigger = trigger;
    let subscribed = { workflow: false, source: false };
    try {
      await this.components.storeRunnable([...fresh, ...(pending?.fresh ?? [])]);
      subscribed = await em.transactional(async (tx) => {
        // Its trigger source and the components made for its steps with it, or none of them.
        const source = pending ? await this.sources.insertPrepared(tx, pending) : false;
        await this.components.insert(tx, fresh);
        if (!pending) await this.lockTriggerSource(tx, ownerId, w.trigger);
        await assertRoomFor(tx, 'workflows', ownerId, this.config.workflowsMaxPerAccount);
        await tx.persist(w).flush();
        // With the subscriptions its account's auto-subscriptions give it, or not at all (they count in the quota).
        return { workflow: await insertAutoSubscriptions(tx, w, 'workflow', this.config.subscriptionsMaxPerAccount), source };
      });
    } catch (e) {
      // Not stored (the name taken or the quota reached meanwhile), nor its trigger source.
      if (/unique/i.test((e as Error).message)) throw new ConflictError(`a workflow named "${clipped(def.name)}" already exists`, { name: clipped(def.name) });
      throw e;
    }
    if (pending) await this.sources.announceCreated(pending, subscribed.source);
    await this.linkTrigger(auth, w);
    if (subscribed.workflow) await announceAutoSubscribed(this.nats, w);
    this.logger.log(`workflow created workflow_id=${w.id} owner_id=${ownerId} deployment_id=${w.deploymentId}`);
    await this.publisher.publishSoon(w.id);
    const current = await this.em.fork().findOne(Workflow, { id: w.id, deletedAt: null });
    if (!current) throw NotFoundError.of('workflow', w.id);
    return current;
  }

  async get(auth: AuthContext, id: string): Promise<Workflow> {
    return assertPathResource(auth, await this.em.fork().findOne(Workflow, { id, deletedAt: null }), 'workflow', id);
  }

  /**
   * A new deploy of the whole definition: a new `d_…`, steps re-resolved (cell ids kept by step name). A deploy
   * stored by another request while this one ran (the row's `rev` moved) is not overwritten blind: this one
   * starts again from the stored workflow, so the one stored last wins with a trigger source that exists.
   */
  async update(auth: AuthContext, id: string, body: Record<string, unknown>): Promise<Workflow> {
    for (let round = 1; ; round++) {
      const stored = await this.deploy(auth, id, body);
      if (stored) return stored;
      if (round === DEPLOY_ROUNDS) throw new ConflictError(`workflow ${id} was deployed by ${DEPLOY_ROUNDS} other requests while this one ran: retry it`, { id, retryable: true });
    }
  }

  /** One round of `update`: the workflow as stored, or undefined when another deploy was stored meanwhile (nothing of this one kept). */
  private async deploy(auth: AuthContext, id: string, body: Record<string, unknown>): Promise<Workflow | undefined> {
    const w = await this.get(auth, id);
    const def = this.definition(body);
    const em = this.em.fork();
    if (def.name !== w.name && (await em.findOne(Workflow, { ownerId: w.ownerId, name: def.name, deletedAt: null }))) {
      throw new ConflictError(`a workflow named "${clipped(def.name)}" already exists`, { name: clipped(def.name) });
    }
    const secrets = this.secrets(def, body.secrets, w.secrets);
    const { rows, components, fresh: made } = await resolveSteps(this.stepsDeps, em, auth, w.ownerId, def.steps, w.steps);
    const endpointKey = 'http' in def.trigger ? (w.endpointKey ?? newEndpointKey()) : null;
    await this.checkTriggerEmitter(auth, w.ownerId, def.trigger, w.id);
    this.publisher.assertFits(Object.assign(new Workflow(), { ...w, trigger: storedTriggerShape(def), steps: rows, settings: def.settings, secrets, endpointKey }), components);
    const { trigger, pending } = await this.triggerRow(auth, w.ownerId, def, w);
    await this.components.storeRunnable([...made, ...(pending?.fresh ?? [])]);
    let sourceSubscribed = false;
    // The trigger this deploy replaces, read with the row locked, unless another deploy was stored since `w` was read.
    const replaced = await em.transactional(async (tx) => {
      const [row] = await tx.execute<{ trigger: Record<string, unknown>; rev: number }[]>('select trigger, rev from workflows where id = ? and deleted_at is null for update', [w.id]);
      if (!row) return undefined;
      if (row.rev !== w.rev) return 'moved' as const;
      // A new trigger source and the components made for its steps, stored with the deploy that uses them.
      sourceSubscribed = pending ? await this.sources.insertPrepared(tx, pending) : false;
      if (!pending) await this.lockTriggerSource(tx, w.ownerId, trigger);
      await this.components.insert(tx, made);
      const values = { name: def.name, deploymentId: newId('deployment'), trigger, steps: rows, settings: def.settings as Record<string, unknown>, secrets, active: body.active !== false, endpointKey };
      await tx.nativeUpdate(Workflow, { id: w.id }, { ...values, rev: raw('rev + 1'), updatedAt: Math.floor(Date.now() / 1000) });
      return row.trigger;
    });
    // Not stored (deleted by a concurrent DELETE, or deployed by another request), nor a source this deploy made.
    if (replaced === 'moved') return undefined;
    if (replaced !== undefined && pending) await this.sources.announceCreated(pending, sourceSubscribed);
    const fresh = replaced ? await this.em.fork().findOne(Workflow, { id: w.id, deletedAt: null }) : null;
    if (!fresh) throw NotFoundError.of('workflow', id);
    await this.linkTrigger(auth, fresh);
    await this.dropManagedSource(auth, replaced, trigger);
    this.logger.log(`workflow updated workflow_id=${w.id} deployment_id=${fresh.deploymentId}`);
    announceReplicaChange(this.nats, 'endpoints', [w.endpointKey, endpointKey]);
    await this.publisher.publishSoon(w.id);
    const current = await this.em.fork().findOne(Workflow, { id: w.id, deletedAt: null });
    if (!current) throw NotFoundError.of('workflow', id);
    return current;
  }

  /**
   * Source and events triggers are subscriptions with the workflow as listener
   * (kept while the trigger is unchanged, replaced when it changes).
   */
  private async linkTrigger(auth: AuthContext, w: Workflow): Promise<void> {
    const em = this.em.fork();
    const t = w.trigger as { source?: string; events?: { emitter_id: string; event_name: string } };
    let wanted: { emitterId: string; eventName: string } | undefined;
    if (t.source) wanted = { emitterId: t.source, eventName: '' };
    else if (t.events) wanted = { emitterId: t.events.emitter_id, eventName: t.events.event_name };
    const current = w.triggerSubscriptionId ? await em.findOne(Subscription, { id: w.triggerSubscriptionId }) : null;
    if (current && wanted && current.emitterId === wanted.emitterId && current.eventName === wanted.eventName) return;
    if (current) await em.nativeDelete(Subscription, { id: current.id });
    let subscriptionId: string | null = null;
    if (wanted) {
      const existing = await em.findOne(Subscription, { ownerId: w.ownerId, emitterId: wanted.emitterId, listenerId: w.id, eventName: wanted.eventName });
      subscriptionId = existing?.id ?? newId('subscription');
      if (!existing) await em.persist(Object.assign(new Subscription(), { id: subscriptionId, ownerId: w.ownerId, emitterId: wanted.emitterId, listenerId: w.id, eventName: wanted.eventName })).flush();
    }
    await em.nativeUpdate(Workflow, { id: w.id }, { triggerSubscriptionId: subscriptionId });
    const emitters = [current?.emitterId, wanted?.emitterId].filter((e): e is string => !!e).map((e) => ({ emitter_id: e, owner_id: w.ownerId }));
    await announceRoutes(this.nats, 'subscriptions', { emitters });
  }

  /** The source a trigger names by id, locked until the workflow is stored: one deleted since it was checked refuses the workflow as not found. */
  private async lockTriggerSource(tx: EntityManager, ownerId: string, trigger: Record<string, unknown>): Promise<void> {
    if (await lockTriggerSource(tx, ownerId, trigger)) return;
    throw new BadRequestError(`trigger.source: emitter ${clipped(String(trigger.source))} not found`, { path: 'trigger.source' }, 'invalid_workflow');
  }

  /**
   * The emitter a `source` (by id) or `events` trigger names must be the owner's, and not the workflow itself
   * (`workflowId`, on a deploy: its events never route to it): checked before anything is stored, so a refused
   * definition (400) leaves no workflow behind.
   */
  private async checkTriggerEmitter(auth: AuthContext, ownerId: string, trigger: WorkflowDefinition['trigger'], workflowId?: string): Promise<void> {
    const t = trigger as { source?: unknown; events?: { emitter_id: string } };
    const [path, emitterId] = typeof t.source === 'string' ? ['trigger.source', t.source] : t.events ? ['trigger.events.emitter_id', t.events.emitter_id] : [];
    if (!path || !emitterId) return;
    if (emitterId === workflowId) throw new BadRequestError(`${path}: a workflow cannot be triggered by its own events (${emitterId})`, { path }, 'invalid_workflow');
    // Not found, or another account's: the id (of any length) quoted `clipped`.
    const notFound = new BadRequestError(`${path}: emitter ${clipped(emitterId)} not found`, { path }, 'invalid_workflow');
    try {
      const emitter = await resolveEmitter(this.em.fork(), auth, emitterId);
      if (emitter.ownerId && emitter.ownerId !== ownerId) throw notFound;
    } catch (e) {
      if (e instanceof NotFoundError || e instanceof BadRequestError) throw notFound;
      throw e;
    }
  }



  async remove(auth: AuthContext, id: string): Promise<void> {
    const w = await this.get(auth, id);
    if (!(await softDeleteWithSubscriptions(this.em, Workflow, w.id))) throw NotFoundError.of('workflow', id);
    await announceRoutes(this.nats, 'sources', { emitters: [{ emitter_id: w.id, owner_id: w.ownerId }], listeners: [w.id] });
    // The trigger as deleted (a deploy may have changed it since it was read above; none can now).
    const final = await this.em.fork().findOne(Workflow, { id: w.id });
    await this.dropManagedSource(auth, final?.trigger ?? w.trigger, null, false);
    this.logger.log(`workflow deleted workflow_id=${w.id}`);
    announceReplicaChange(this.nats, 'endpoints', [w.endpointKey]);
    announceReplicaChange(this.nats, 'deleted', [w.id]);
    await this.publisher.publishSoon(w.id);
    await this.nats.purgeInvocations(w.id).catch((e: Error) => this.logger.warn(`purging the invocations of deleted workflow ${w.id} failed: ${e.message}`));
    await this.dropSends(w.id);
    // Its steps ran in the owner's sandbox processes: what they left behind there stops (and its trigger source's).
    retireSandboxesOf(this.nats, w.ownerId, `workflow ${w.id}`, this.logger);
  }

  /** Its `$.send.*` calls not performed yet are dropped: those in SENDS and those waiting in Postgres for their next attempt. */
  private async dropSends(id: string): Promise<void> {
    await this.nats.jsm.streams.purge(this.nats.names.sendsStream, { filter: this.nats.names.send(id) }).catch((e: Error) => this.logger.warn(`purging the sends of deleted workflow ${id} failed: ${e.message}`));
    await this.em.fork().getConnection().execute(`delete from send_retries where workflow_id = ?`, [id], 'run')
      .catch((e: Error) => this.logger.warn(`dropping the waiting sends of deleted workflow ${id} failed (the delivery app drops them when due): ${e.message}`));
  }
}

/** The trigger as it will be stored (an inline source as the `dc_…` it becomes), for measuring before it is deployed. */
function storedTriggerShape(def: WorkflowDefinition): Record<string, unknown> {
  const t = def.trigger as Record<string, unknown>;
  return 'source' in t && typeof t.source !== 'string' ? { source: newId('source'), managed: true } : t;
}

/** The source deployed for a workflow's trigger (as stored), if any. */
function managedSourceOf(trigger: Record<string, unknown> | undefined): string | undefined {
  const t = trigger as { source?: unknown; managed?: unknown } | undefined;
  return t?.managed === true && typeof t.source === 'string' ? t.source : undefined;
}
