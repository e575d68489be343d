import { Inject, Injectable, Logger } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { addedTimerProp } from '@app/component-model';
import { APP_CONFIG, AppConfig } from '@app/config';
import { DesiredSourceState, partitionOf } from '@app/contracts';
import { Component, Source } from '@app/db';
import { NatsService } from '@app/nats';
import { putNewerDesired } from '../common/put-newer-desired';
import { ComponentsService, runnableCode, runnableHashOf, WITHOUT_CODE } from '../components/components.service';
import { endpointUrlOf } from '../http-endpoints/endpoint-urls';

export { endpointUrlOf };

/**
 * Puts a source's desired state into KV `sources` (or deletes it), never
 * moving the KV backwards: a put only replaces an entry holding an older `rev`
 * (compare-and-set on the KV revision), so concurrent publishers cannot
 * reinstate a stale state.
 */
@Injectable()
export class SourcePublisher {
  private readonly logger = new Logger('SourcePublisher');

  constructor(
    private readonly em: EntityManager,
    private readonly nats: NatsService,
    private readonly components: ComponentsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  keyOf(sourceId: string): string {
    return this.nats.names.sourceKey(partitionOf(sourceId, this.config.partitions), sourceId);
  }

  stateOf(source: Source, component: Component): DesiredSourceState {
    const dependencyVersions = (component.meta as { dependencyVersions?: Record<string, string> }).dependencyVersions;
    const timerProp = addedTimerProp(source.additionalProps);
    return {
      sourceId: source.id,
      ownerId: source.ownerId,
      userId: source.userId,
      rev: source.rev,
      active: source.active,
      componentId: component.id,
      codeHash: runnableHashOf(component),
      configuredProps: source.configuredProps,
      ...(source.endpointKey ? { endpointKey: source.endpointKey, endpointUrl: endpointUrlOf(this.config, source.endpointKey) } : {}),
      runTimeoutMs: Math.min(source.runTimeoutMs ?? this.config.runTimeoutMs, this.config.maxRunTimeoutMs),
      updatedAtMs: Date.now(),
      ...(dependencyVersions ? { dependencyVersions } : {}),
      ...(timerProp ? { timerProp } : {}),
    };
  }

  /**
   * Publishes the source's current row (re-read) and records `publishedRev`; finishes a pending delete. Its component
   * is read `WITHOUT_CODE`: its code is read only to be put into the object store when it is missing there.
   */
  async publish(sourceId: string): Promise<void> {
    const em = this.em.fork();
    const source = await em.findOne(Source, { id: sourceId });
    if (!source) return;
    const key = this.keyOf(source.id);
    if (source.deletedAt) {
      await this.nats.sources.delete(key);
      await em.nativeDelete(Source, { id: source.id, deletedAt: { $ne: null } });
      this.logger.log(`source removed source_id=${source.id}`);
      return;
    }
    const component = (await em.findOne(Component, { id: source.componentId }, WITHOUT_CODE)) as Component | null;
    if (!component) throw new Error(`source ${source.id} refers to missing component ${source.componentId}`);
    await this.components.storeCode(runnableHashOf(component), () => runnableCode(em, component));
    await putNewerDesired(this.nats, key, this.stateOf(source, component), source.id);
    await em.nativeUpdate(Source, { id: source.id, publishedRev: { $lt: source.rev } }, { publishedRev: source.rev });
    this.logger.debug(`desired state published source_id=${source.id} rev=${source.rev}`);
  }

  /** Publishes now; a failure is left to the reconciler (the row keeps `publishedRev < rev`). */
  async publishSoon(sourceId: string): Promise<void> {
    // NATS down (reconnecting): Postgres has the change, and the reconciler publishes it once NATS is back; waiting
    // for a publish that can only time out would hold the request for the JetStream timeout.
    if (!(await this.nats.waitConnected())) {
      this.logger.warn(`NATS is unavailable: the reconciler will publish source_id=${sourceId}`);
      return;
    }
    try {
      await this.publish(sourceId);
    } catch (e) {
      this.logger.warn(`publishing desired state failed, the reconciler will retry: source_id=${sourceId} err=${(e as Error).message}`);
    }
  }
}
