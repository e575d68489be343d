import { Inject, Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { partitionOf } from '@app/contracts';
import { NatsService } from '@app/nats';
import { onReplicaChange } from '../common/replica-changes';
import { BoundedLane, unknownKeysLane } from '../common/bounded-lane';
import { RecentKeys } from '../common/recent-keys';

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
/** Endpoints remembered at most; past this the expired ones go, then the least recently loaded. */
const KNOWN_MAX = 50_000;
/** Keys found to be no endpoint remembered at most (for MISS_TTL_MS), the oldest forgotten first. */
const MISSES_MAX = 10_000;
/** What an endpoint key may look like (newEndpointKey's); anything else is no endpoint, without a look-up. */
const ENDPOINT_KEY = /^[a-z0-9]{1,64}$/;

interface Entry {
  target: EndpointTarget;
  loadedAt: number;
  expiresAt: number;
  refreshing?: boolean;
}

interface Row {
  id: string;
  owner_id: string;
  active: boolean;
  custom_response: boolean | null;
}

/** A source's endpoint or else an HTTP-triggered workflow's (same `/e/<key>` ingress), in one round trip. */
const ENDPOINT_QUERY = `select id, owner_id, active, custom_response from (
    select s.id, s.owner_id, s.active, coalesce(c.meta -> 'customResponse' = 'true'::jsonb, false) as custom_response, 0 as pick
      from sources s left join components c on c.id = s.component_id
     where s.endpoint_key = ? and s.deleted_at is null
    union all
    select id, owner_id, active, coalesce(trigger -> 'http' -> 'customResponse' = 'true'::jsonb, false), 1
      from workflows where endpoint_key = ? and deleted_at is null
  ) t order by pick limit 1`;

/**
 * endpoint key → source, from Postgres with a short cache so a busy endpoint
 * costs no query per request. Changes made through the api (activate, deactivate,
 * delete, new code without customResponse) drop the key from every replica's
 * cache at once (`announceReplicaChange`); any other is seen within TTL_MS. Concurrent misses of
 * one key share one load, and a hit past REFRESH_AFTER_MS reloads in the
 * background while the entry is still fresh, so requests to a busy endpoint
 * never wait for the database.
 *
 * Anyone may call `/e/<any key>`, so keys not known as endpoints are looked up in a lane of their own
 * (`unknownKeysLane`: a quarter of the pool, then 503 with Retry-After). Made-up keys sent as fast as the api answers
 * them therefore leave the pool to `/v1` and to endpoints already known, and they never push known endpoints out of
 * the cache: misses are remembered apart, MISSES_MAX at most.
 */
@Injectable()
export class EndpointLookup implements OnModuleInit, OnModuleDestroy {
  private readonly known = new Map<string, Entry>();
  private readonly misses = new RecentKeys(MISSES_MAX);
  private readonly loading = new Map<string, Promise<EndpointTarget | null>>();
  private readonly unknownLoads: BoundedLane;
  private unsubscribe?: () => void;

  constructor(private readonly em: EntityManager, private readonly nats: NatsService, @Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.unknownLoads = unknownKeysLane(config.dbPoolMax);
  }

  onModuleInit(): void {
    this.unsubscribe = onReplicaChange(this.nats, 'endpoints', (key) => {
      this.known.delete(key);
      this.misses.delete(key);
      // A load that began before the change may still write its older answer: not for this key.
      this.loading.delete(key);
    });
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
  }

  find(endpointKey: string): Promise<EndpointTarget | null> | EndpointTarget | null {
    const now = Date.now();
    const hit = this.known.get(endpointKey);
    if (hit && hit.expiresAt > now) {
      if (!hit.refreshing && now - hit.loadedAt > REFRESH_AFTER_MS) {
        hit.refreshing = true;
        this.fetch(endpointKey)?.catch(() => (hit.refreshing = false));
      }
      return hit.target;
    }
    return this.misses.has(endpointKey, now) ? null : this.fetch(endpointKey);
  }

  private fetch(endpointKey: string): Promise<EndpointTarget | null> | null {
    if (!ENDPOINT_KEY.test(endpointKey)) return null;
    const running = this.loading.get(endpointKey);
    if (running) return running;
    const startedAt = Date.now();
    const load = (): Promise<EndpointTarget | null> => this.load(endpointKey);
    const p: Promise<EndpointTarget | null> = (this.known.has(endpointKey) ? load() : this.unknownLoads.run(load)).then(
      (target) => {
        // The endpoint changed while it loaded: this answer may be older than the change, so it is not kept.
        if (this.loading.get(endpointKey) !== p) return target;
        this.loading.delete(endpointKey);
        this.remember(endpointKey, target, startedAt);
        return target;
      },
      (e: unknown) => {
        if (this.loading.get(endpointKey) === p) this.loading.delete(endpointKey);
        throw e;
      },
    );
    // Whoever asked gets the failure; a caller that did not wait for it (the fast path) leaves no unhandled rejection.
    p.catch(() => undefined);
    this.loading.set(endpointKey, p);
    return p;
  }

  /** Keeps an answer, endpoints and misses each in their own bounded map (the most recent last). */
  private remember(endpointKey: string, target: EndpointTarget | null, loadedAt: number): void {
    this.known.delete(endpointKey);
    this.misses.delete(endpointKey);
    if (!target) return this.misses.add(endpointKey, loadedAt + MISS_TTL_MS);
    if (this.known.size >= KNOWN_MAX) {
      for (const [key, e] of this.known) if (e.expiresAt <= loadedAt) this.known.delete(key);
      if (this.known.size >= KNOWN_MAX) this.known.delete(this.known.keys().next().value as string);
    }
    this.known.set(endpointKey, { target, loadedAt, expiresAt: loadedAt + TTL_MS });
  }

  private async load(endpointKey: string): Promise<EndpointTarget | null> {
    // One query, no entity hydration: this runs for every busy endpoint every few seconds.
    const [row] = (await this.em.getConnection().execute(ENDPOINT_QUERY, [endpointKey, endpointKey])) as Row[];
    return row ? this.target(row) : null;
  }

  private target(row: Row): EndpointTarget {
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
