import type { KV } from 'nats';
import type { Logger } from 'pino';
import type { Names } from '@app/contracts';

export interface LeaseCallbacks {
  /** A lease was won; `fence` is unique to this acquisition. */
  acquired(partition: number, fence: string): Promise<void>;
  /** A renewal failed: another replica may own it now; stop at once. */
  lost(partition: number): Promise<void>;
  /** About to hand the partition back (rebalancing, shutdown): stop gracefully. */
  releasing(partition: number): Promise<void>;
}

export interface LeaseOptions {
  partitions: number;
  ttlMs: number;
  replicaId: string;
  names: Names;
  /**
   * Whether the connection the partitions work on is up (leases go over a connection of their own):
   * while it is not, no lease is renewed or taken, so another replica takes the partitions.
   */
  workConnected?: () => Promise<boolean>;
}

const REPLICA_PREFIX = 'r.';

/**
 * Partition leases in KV `leases` (bucket TTL = lease TTL): `p.<n>` → replica
 * id, created with `create` and renewed with compare-and-set every TTL/3.
 * Replicas announce themselves with a `r.<replicaId>` heartbeat in the same
 * bucket; each one holds at most ceil(partitions / replicas) and releases the
 * extras, so a replica that joins gets its share and a dead one's partitions
 * are taken over once its leases expire.
 */
export class PartitionLeases {
  private readonly owned = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private closed = false;
  private replicas = 1;

  constructor(private readonly kv: KV, private readonly opts: LeaseOptions, private readonly cb: LeaseCallbacks, private readonly log: Logger) {}

  get ownedPartitions(): number[] {
    return [...this.owned.keys()].sort((a, b) => a - b);
  }

  get liveReplicas(): number {
    return this.replicas;
  }

  async start(): Promise<void> {
    await this.tick();
    this.timer = setInterval(() => void this.tick(), Math.max(200, Math.floor(this.opts.ttlMs / 3)));
  }

  /** Releases every lease (after each partition stopped gracefully) and withdraws the heartbeat. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.ticking;
    for (const p of this.ownedPartitions) await this.release(p);
    await this.kv.delete(REPLICA_PREFIX + this.opts.replicaId).catch(() => undefined);
  }

  tick(): Promise<void> {
    if (!this.ticking) this.ticking = this.round().finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  private async round(): Promise<void> {
    if (this.closed) return;
    // Renewals come first and fail one by one (a partition whose renewal fails is stopped at once),
    // so an unreachable NATS stops the partitions before another replica may take them.
    if (this.opts.workConnected && !(await this.opts.workConnected())) {
      await this.loseAll('the NATS connection the partitions work on is down');
      return;
    }
    try {
      await this.renew();
    } catch (err) {
      this.log.error({ err }, 'lease renewal failed');
    }
    try {
      await this.kv.put(REPLICA_PREFIX + this.opts.replicaId, new TextEncoder().encode(String(Date.now())));
      this.replicas = Math.max(1, await this.countReplicas());
      const target = Math.ceil(this.opts.partitions / this.replicas);
      while (this.owned.size > target && !this.closed) await this.release(Math.max(...this.owned.keys()));
      if (this.owned.size < target) await this.acquire(target);
    } catch (err) {
      this.log.warn({ err }, 'lease round failed');
    }
  }

  /** Renews every owned lease at once (a slow NATS must not delay the others past their TTL). */
  private async renew(): Promise<void> {
    await Promise.all(
      [...this.owned].map(async ([p, revision]) => {
        try {
          this.owned.set(p, await this.kv.update(this.opts.names.leaseKey(p), this.value(), revision));
        } catch (err) {
          if (this.owned.get(p) !== revision) return;
          this.owned.delete(p);
          this.log.warn({ partition: p, err: (err as Error).message }, 'partition lease lost');
          await this.cb.lost(p);
        }
      }),
    );
  }

  /** Gives up every lease without renewing it: each partition stops at once, its lease expires for another replica. */
  private async loseAll(reason: string): Promise<void> {
    for (const p of this.ownedPartitions) {
      this.owned.delete(p);
      this.log.warn({ partition: p, reason }, 'partition lease lost');
      await this.cb.lost(p);
    }
  }

  private async countReplicas(): Promise<number> {
    const keys = await this.kv.keys(`${REPLICA_PREFIX}*`);
    let n = 0;
    for await (const k of keys) if (k) n++;
    return n;
  }

  private async acquire(target: number): Promise<void> {
    // Start at a replica-specific offset so replicas starting together do not race for the same keys.
    const offset = hash(this.opts.replicaId) % this.opts.partitions;
    for (let i = 0; i < this.opts.partitions && this.owned.size < target && !this.closed; i++) {
      const p = (offset + i) % this.opts.partitions;
      if (this.owned.has(p)) continue;
      const e = await this.kv.get(this.opts.names.leaseKey(p));
      if (e && e.operation === 'PUT') continue;
      let revision: number;
      try {
        revision = await this.kv.create(this.opts.names.leaseKey(p), this.value());
      } catch {
        continue; // someone else was faster
      }
      this.owned.set(p, revision);
      this.log.info({ partition: p }, 'partition lease acquired');
      try {
        await this.cb.acquired(p, `${this.opts.replicaId}#${revision}`);
      } catch (err) {
        this.log.error({ partition: p, err }, 'partition failed to start: releasing it');
        await this.release(p);
      }
    }
  }

  private async release(p: number): Promise<void> {
    const revision = this.owned.get(p);
    if (revision === undefined) return;
    await this.cb.releasing(p);
    this.owned.delete(p);
    await this.kv.delete(this.opts.names.leaseKey(p), { previousSeq: revision }).catch(() => undefined);
    this.log.info({ partition: p }, 'partition lease released');
  }

  private value(): Uint8Array {
    return new TextEncoder().encode(this.opts.replicaId);
  }
}

function hash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) >>> 0;
  return h;
}
