import { Inject, Injectable } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { partitionOf } from '@app/contracts';
import { Component, Source } from '@app/db';

/** What the ingress needs to know about an endpoint. */
export interface EndpointTarget {
  sourceId: string;
  ownerId: string;
  partition: number;
  active: boolean;
  customResponse: boolean;
}

const TTL_MS = 3_000;
const MISS_TTL_MS = 1_000;
const MAX_ENTRIES = 50_000;

/**
 * endpoint key → source, from Postgres with a short cache so a busy endpoint
 * costs no query per request; changes (deactivate, delete, new code without
 * customResponse) are seen within a few seconds.
 */
@Injectable()
export class EndpointLookup {
  private readonly cache = new Map<string, { target: EndpointTarget | null; expiresAt: number }>();

  constructor(private readonly em: EntityManager, @Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async find(endpointKey: string): Promise<EndpointTarget | null> {
    const now = Date.now();
    const hit = this.cache.get(endpointKey);
    if (hit && hit.expiresAt > now) return hit.target;
    const target = await this.load(endpointKey);
    if (this.cache.size >= MAX_ENTRIES) this.cache.clear();
    this.cache.set(endpointKey, { target, expiresAt: now + (target ? TTL_MS : MISS_TTL_MS) });
    return target;
  }

  private async load(endpointKey: string): Promise<EndpointTarget | null> {
    if (!/^[a-z0-9]{1,64}$/.test(endpointKey)) return null;
    const em = this.em.fork();
    const source = await em.findOne(Source, { endpointKey, deletedAt: null });
    if (!source) return null;
    const component = await em.findOne(Component, { id: source.componentId }, { fields: ['id', 'meta'] });
    const meta = (component?.meta ?? {}) as { customResponse?: unknown };
    return {
      sourceId: source.id,
      ownerId: source.ownerId,
      partition: partitionOf(source.id, this.config.partitions),
      active: source.active,
      customResponse: meta.customResponse === true,
    };
  }
}
