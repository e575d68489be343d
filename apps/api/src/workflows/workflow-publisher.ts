import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import type { WorkflowTriggerDef } from '@app/component-model';
import { APP_CONFIG, AppConfig } from '@app/config';
import { DesiredWorkflowState, partitionOf, PayloadTooLargeError, WorkflowTriggerState } from '@app/contracts';
import { Component, Workflow } from '@app/db';
import { NatsService } from '@app/nats';
import { putNewerDesired } from '../common/put-newer-desired';
import { ReconcileLoop } from '../common/reconcile-loop';
import { ComponentsService, runnableCode, runnableHashOf, WITHOUT_CODE } from '../components/components.service';
import { endpointUrlOf } from '../http-endpoints/endpoint-urls';

/** Room left in a NATS message beside a desired state (its KV entry's headers, a later deploy's longer ids). */
const DESIRED_STATE_ROOM_BYTES = 4096;

function triggerState(t: WorkflowTriggerDef): WorkflowTriggerState {
  if ('http' in t) return { type: 'http', customResponse: t.http.customResponse };
  if ('timer' in t) return { type: 'timer', schedule: t.timer };
  // A stored source trigger is always a source id (an inline source is deployed first: `{ source: dc_…, managed: true }`).
  if ('source' in t) return { type: 'source', emitterId: t.source as string };
  if ('events' in t) return { type: 'events', emitterId: t.events.emitter_id, eventName: t.events.event_name };
  return { type: 'manual' };
}

/**
 * Puts a workflow's desired state into KV `sources` (key `<p>.<p_…>`, beside
 * sources: same partitions, leases and runner consumers), never moving it
 * backwards, and republishes workflows whose published revision lags (one api
 * replica at a time, a lease in KV `leases`).
 */
@Injectable()
export class WorkflowPublisher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('WorkflowPublisher');
  private readonly loop: ReconcileLoop;

  constructor(
    private readonly em: EntityManager,
    private readonly nats: NatsService,
    private readonly components: ComponentsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.loop = new ReconcileLoop(em, nats, { table: 'workflows', leaseKey: 'api.workflow-reconciler', intervalMs: config.reconcileIntervalMs, publish: (id) => this.publish(id), logger: this.logger });
  }

  endpointUrl(key: string): string {
    return endpointUrlOf(this.config, key) as string;
  }

  keyOf(id: string): string {
    return this.nats.names.sourceKey(partitionOf(id, this.config.partitions), id);
  }

  async publish(id: string): Promise<void> {
    const em = this.em.fork();
    const w = await em.findOne(Workflow, { id });
    if (!w) return;
    const key = this.keyOf(id);
    if (w.deletedAt) {
      await this.nats.sources.delete(key);
      await em.nativeDelete(Workflow, { id, deletedAt: { $ne: null } });
      this.logger.log(`workflow removed workflow_id=${id}`);
      return;
    }
    // Read without their code, which is read (one component's at a time) only when the object store lacks it.
    const comps = (await em.find(Component, { id: { $in: w.steps.map((s) => s.componentId) } }, WITHOUT_CODE)) as Component[];
    const state = this.desiredState(w, comps);
    for (const c of comps) await this.components.storeCode(runnableHashOf(c), () => runnableCode(em, c));
    await putNewerDesired(this.nats, key, state, state.workflowId);
    await em.nativeUpdate(Workflow, { id, publishedRev: { $lt: w.rev } }, { publishedRev: w.rev });
  }

  /**
   * Refuses (`413`) a workflow whose desired state would not fit one NATS message (its KV value): it could never be
   * published, so it would be stored and never run.
   */
  assertFits(w: Workflow, components: Component[]): void {
    const bytes = Buffer.byteLength(JSON.stringify(this.desiredState(w, components)));
    const max = this.nats.maxPayload - DESIRED_STATE_ROOM_BYTES;
    if (bytes > max) {
      throw new PayloadTooLargeError(`the workflow is ${bytes} bytes as the runner reads it (its steps with their props, and its secrets), over the ${max} bytes one NATS message holds: give its steps fewer or smaller props, or it fewer secrets`, { bytes, limit_bytes: max });
    }
  }

  /** A workflow's desired state as the runner reads it, from its row and its steps' components. */
  private desiredState(w: Workflow, components: Component[]): DesiredWorkflowState {
    const byId = new Map(components.map((c) => [c.id, c]));
    const steps = w.steps.map((s) => {
      const c = byId.get(s.componentId);
      if (!c) throw new Error(`workflow ${w.id} refers to missing component ${s.componentId}`);
      const dependencyVersions = (c.meta as { dependencyVersions?: Record<string, string> }).dependencyVersions;
      return { name: s.name, cellId: s.cellId, componentId: c.id, codeHash: runnableHashOf(c), props: s.props, ...(dependencyVersions ? { dependencyVersions } : {}) };
    });
    const settings = w.settings as { concurrency?: number; throttle?: { limit: number; period_seconds: number }; timeout_seconds?: number };
    return {
      kind: 'workflow',
      workflowId: w.id,
      ownerId: w.ownerId,
      userId: w.userId,
      rev: w.rev,
      active: w.active,
      deploymentId: w.deploymentId,
      trigger: triggerState(w.trigger as unknown as WorkflowTriggerDef),
      steps,
      secrets: w.secrets,
      ...(settings.concurrency ? { concurrency: settings.concurrency } : {}),
      ...(settings.throttle ? { throttle: { limit: settings.throttle.limit, periodSeconds: settings.throttle.period_seconds } } : {}),
      runTimeoutMs: Math.min(settings.timeout_seconds ? settings.timeout_seconds * 1000 : this.config.runTimeoutMs, this.config.maxRunTimeoutMs),
      ...(w.endpointKey ? { endpointUrl: this.endpointUrl(w.endpointKey) } : {}),
      updatedAtMs: Date.now(),
      codeHash: steps[0]?.codeHash ?? '',
      codeHashes: [...new Set(steps.map((s) => s.codeHash))],
    };
  }

  async publishSoon(id: string): Promise<void> {
    // NATS down (reconnecting): Postgres has the change, and the reconciler publishes it once NATS is back; waiting
    // for a publish that can only time out would hold the request for the JetStream timeout.
    if (!(await this.nats.waitConnected())) {
      this.logger.warn(`NATS is unavailable: the reconciler will publish workflow_id=${id}`);
      return;
    }
    try {
      await this.publish(id);
    } catch (e) {
      this.logger.warn(`publishing workflow failed, the reconciler will retry: workflow_id=${id} err=${(e as Error).message}`);
    }
  }

  onApplicationBootstrap(): void {
    this.loop.start();
  }

  onApplicationShutdown(): void {
    this.loop.stop();
  }
}
