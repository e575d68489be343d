import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { codeHashesOf, decodeJson, DesiredSourceState } from '@app/contracts';
import { deleteObjectIf, lastTouchMs, NatsService, putSliced, rawObjectInfo } from '@app/nats';
import { ComponentsService } from './components.service';

/** KV `leases` key holding the last time slot a collection round was done for (by any replica). */
const SLOT_KEY = 'api.component-gc';

/** What one collection round did. */
export interface GcRound {
  objects: number;
  referenced: number;
  /** Unreferenced but stored or touched within the grace period. */
  keptRecent: number;
  removed: string[];
  /** Removed, then found referenced by a publish that raced the round: stored again from Postgres. */
  restored: string[];
}

/** Counters since the process started (reported in the api's /healthz). */
export interface GcStats {
  interval_ms: number;
  grace_ms: number;
  rounds: number;
  removed: number;
  restored: number;
  /** When this replica's last round ended (epoch ms); null before its first. */
  last_round_at: number | null;
}

/**
 * Removes component code from the `components` object store once no source's desired
 * state (KV `sources`) references it. Safe with several api replicas and runners:
 *
 * - one replica per round: rounds are aligned to multiples of COMPONENT_GC_INTERVAL_MS (time slots); a replica
 *   works under a transaction-scoped Postgres advisory lock (`pg_try_advisory_xact_lock`) and skips the slot when
 *   it misses the lock or another replica already recorded the slot as done (KV `leases`);
 * - a publish stores or *touches* the code (compare-and-set on the object's meta) before it writes the desired
 *   state, and the collector removes only objects whose last store/touch is older than COMPONENT_GC_GRACE_MS,
 *   re-reading each object's meta just before a compare-and-set delete: a touch in between makes the delete fail;
 * - after removing, the round re-reads KV `sources`; code that became referenced meanwhile is stored again
 *   from Postgres (last line of defence, e.g. against clock skew between replicas).
 */
@Injectable()
export class ComponentGc implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('ComponentGc');
  private timer?: NodeJS.Timeout;
  private running?: Promise<GcRound | null>;
  private stopped = false;
  readonly stats: GcStats;

  constructor(
    private readonly em: EntityManager,
    private readonly nats: NatsService,
    private readonly components: ComponentsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.stats = { interval_ms: config.componentGcIntervalMs, grace_ms: config.componentGcGraceMs, rounds: 0, removed: 0, restored: 0, last_round_at: null };
  }

  onApplicationBootstrap(): void {
    if (this.config.componentGcIntervalMs > 0) this.schedule();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }

  /** Next round at the next multiple of the interval (wall clock), so replicas try the same slot. */
  private schedule(): void {
    if (this.stopped) return;
    const interval = this.config.componentGcIntervalMs;
    this.timer = setTimeout(() => {
      void this.runRound(Math.floor(Date.now() / interval))
        .catch((e: Error) => this.logger.warn(`component gc round failed: ${e.message}`))
        .finally(() => this.schedule());
    }, interval - (Date.now() % interval) + 5);
    this.timer.unref();
  }

  /**
   * The round of time slot `slot` (Date.now() / interval), unless another replica holds the lock or
   * already did this slot (then null). The slot done is recorded in KV `leases` (key `api.component-gc`,
   * kept for LEASE_TTL_MS, long enough for the replicas that fire at the same slot boundary).
   */
  runRound(slot: number): Promise<GcRound | null> {
    if (this.running) return this.running;
    this.running = this.em
      .fork()
      .transactional(async (tx) => {
        const [{ locked }] = await tx.execute(`select pg_try_advisory_xact_lock(hashtext('component-gc')) as locked`);
        if (!locked) return null;
        const done = await this.nats.leases.get(SLOT_KEY);
        if (done && done.operation === 'PUT' && done.string() === String(slot)) return null;
        const round = await this.collect(tx, slot);
        await this.nats.leases.put(SLOT_KEY, new TextEncoder().encode(String(slot)));
        return round;
      })
      .finally(() => (this.running = undefined));
    return this.running;
  }

  /** Code hashes referenced by the desired state of any source or workflow (inactive ones and pending deletes included). */
  private async referencedHashes(): Promise<Set<string>> {
    const keys: string[] = [];
    for await (const k of await this.nats.sources.keys()) keys.push(k);
    const out = new Set<string>();
    for (let i = 0; i < keys.length; i += 64) {
      const entries = await Promise.all(keys.slice(i, i + 64).map((k) => this.nats.sources.get(k)));
      for (const e of entries) {
        if (e && e.operation === 'PUT' && e.value.length) for (const h of codeHashesOf(decodeJson<DesiredSourceState>(e.value))) out.add(h);
      }
    }
    return out;
  }

  private async collect(em: EntityManager, slot: number): Promise<GcRound> {
    const grace = this.config.componentGcGraceMs;
    const names = (await this.nats.components.list()).filter((o) => !o.deleted).map((o) => o.name);
    const referenced = await this.referencedHashes();
    const round: GcRound = { objects: names.length, referenced: referenced.size, keptRecent: 0, removed: [], restored: [] };
    for (const name of names) {
      if (this.stopped) break;
      if (referenced.has(name)) continue;
      const info = await rawObjectInfo(this.nats.components, name);
      if (!info || info.deleted) continue;
      const ageMs = Date.now() - lastTouchMs(info);
      if (ageMs < grace) {
        round.keptRecent++;
        continue;
      }
      if (!(await deleteObjectIf(this.nats.components, info))) continue;
      this.components.forgetStored(name);
      round.removed.push(name);
      this.logger.log(`component code removed code_hash=${name} unused_for_ms>=${ageMs}`);
    }
    if (round.removed.length) {
      const now = await this.referencedHashes();
      for (const name of round.removed.filter((n) => now.has(n))) {
        // Only the column with that hash: a component's code and its bundle may each be COMPONENT_MAX_BYTES.
        const sql = `select case when bundle_hash = ? then bundle else code end as code from components where code_hash = ? or bundle_hash = ? limit 1`;
        const [row] = await em.getConnection().execute<{ code: string | null }[]>(sql, [name, name, name]);
        if (typeof row?.code !== 'string') {
          this.logger.error(`component code ${name} is referenced again but no component row has it`);
          continue;
        }
        await putSliced(this.nats.components, name, Buffer.from(row.code, 'utf8'));
        round.restored.push(name);
        this.logger.warn(`component code restored code_hash=${name} (a publish raced the collector)`);
      }
    }
    this.stats.rounds++;
    this.stats.removed += round.removed.length - round.restored.length;
    this.stats.restored += round.restored.length;
    this.stats.last_round_at = Date.now();
    this.logger.log(`component gc round slot=${slot} objects=${round.objects} referenced=${round.referenced} removed=${round.removed.length} kept_recent=${round.keptRecent} restored=${round.restored.length}`);
    return round;
  }
}
