import { Inject, Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { partitionOf } from '@app/contracts';
import { NatsService } from '@app/nats';
import { onReplicaChange } from '../common/replica-changes';

/** What the ingress needs to know about an endpoint. */
export interface EndpointTarget {
  sourceId: string;
  ownerId: string;
  partition: number;
  active: boolean;
  customResponse: boolean;
  /** What answers at the endpoint: named in the errors callers get. */
  kind: 'source' | 'workflow';
}

const TTL_MS = 3_000;
/** A hit older than this starts a refresh in the background (so a busy endpoint never waits for Postgres). */
const REFRESH_AFTER_MS = 2_000;
const MISS_TTL_MS = 1_000;
const MAX_ENTRIES = 50_000;

interface Entry {
  target: EndpointTarget | null;
  loadedAt: number;
  expiresAt: number;
  refreshing?: boolean;
}

/**
 * endpoint key → source, from Postgres with a short cache so a busy endpoint
 * costs no query per request. Changes made through the api (activate, deactivate,
 * delete, new code without customResponse) drop the key from every replica's
 * cache at once (`announceReplicaChange`); any other is seen within TTL_MS. Concurrent misses of
 * one key share one load, and a hit past REFRESH_AFTER_MS reloads in the
 * background while the entry is still fresh, so requests to a busy endpoint
 * never wait for the database.
 */
@Injectable()
export class EndpointLookup implements OnModuleInit, OnModuleDestroy {
  private readonly cache = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<EndpointTarget | null>>();
  private unsubscribe?: () => void;

  constructor(private readonly em: EntityManager, private readonly nats: NatsService, @Inject(APP_CONFIG) private readonly config: AppConfig) {}

  onModuleInit(): void {
    this.unsubscribe = onReplicaChange(this.nats, 'endpoints', (key) => {
      this.cache.delete(key);
      // A load that began before the change may still write its older answer: not for this key.
      this.loading.delete(key);
    });
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
  }

  find(endpointKey: string): Promise<EndpointTarget | null> | EndpointTarget | null {
    const now = Date.now();
    const hit = this.cache.get(endpointKey);
    if (hit && hit.expiresAt > now) {
      if (hit.target && !hit.refreshing && now - hit.loadedAt > REFRESH_AFTER_MS) {
        hit.refreshing = true;
        this.fetch(endpointKey).catch(() => (hit.refreshing = false));
      }
      return hit.target;
    }
    return this.fetch(endpointKey);
  }

  private fetch(endpointKey: string): Promise<EndpointTarget | null> {
    const running = this.loading.get(endpointKey);
    if (running) return running;
    const startedAt = Date.now();
    const p: Promise<EndpointTarget | null> = this.load(endpointKey).then(
      (target) => {
        // The endpoint changed while it loaded: this answer may be older than the change, so it is not kept.
        if (this.loading.get(endpointKey) !== p) return target;
        this.loading.delete(endpointKey);
        if (this.cache.size >= MAX_ENTRIES) this.cache.clear();
        this.cache.set(endpointKey, { target, loadedAt: startedAt, expiresAt: startedAt + (target ? TTL_MS : MISS_TTL_MS) });
        return target;
      },
      (e: unknown) => {
        if (this.loading.get(endpointKey) === p) this.loading.delete(endpointKey);
        throw e;
      },
    );
    this.loading.set(endpointKey, p);
    return p;
  }

  private async load(endpointKey: string): Promise<EndpointTarget | null> {
    if (!/^[a-z0-9]{1,64}$/.test(endpointKey)) return null;
    // One query, no entity hydration: this runs for every busy endpoint every few seconds.
    const [row] = (await this.em.getConnection().execute(
      `select s.id, s.owner_id, s.active, coalesce(c.meta -> 'customResponse' = 'true'::jsonb, false) as custom_response
         from sources s left join components c on c.id = s.component_id
        where s.endpoint_key = ? and s.deleted_at is null limit 1`,
      [endpointKey],
    )) as { id: string; owner_id: string; active: boolean; custom_response: boolean | null }[];
    if (!row) return this.loadWorkflow(endpointKey);
    return this.target(row);
  }

  /** An HTTP-triggered workflow's endpoint (same `/e/<key>` ingress; its invocations go to the workflow's partition). */
  private async loadWorkflow(endpointKey: string): Promise<EndpointTarget | null> {
    const [row] = (await this.em.getConnection().execute(
      `select id, owner_id, active, coalesce(trigger -> 'http' -> 'customResponse' = 'true'::jsonb, false) as custom_response
         from workflows where endpoint_key = ? and deleted_at is null limit 1`,
      [endpointKey],
    )) as { id: string; owner_id: string; active: boolean; custom_response: boolean | null }[];
    return row ? this.target(row) : null;
  }

  private target(row: { id: string; owner_id: string; active: boolean; custom_response: boolean | null }): EndpointTarget {
    return {
      sourceId: row.id,
      ownerId: row.owner_id,
      partition: partitionOf(row.id, this.config.partitions),
      active: row.active,
      customResponse: row.custom_response === true,
      kind: row.id.startsWith('p_') ? 'workflow' : 'source',
    };
  }
}
