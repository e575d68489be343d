import type { KV } from 'nats';
import pino from 'pino';
import { Names } from '@app/contracts';
import { PartitionLeases } from './partition-leases';

/** The subset of a KV bucket the leases use, with a bucket TTL like JetStream's max_age. */
class FakeKv {
  private rev = 0;
  private readonly entries = new Map<string, { value: Uint8Array; revision: number; at: number }>();
  constructor(private readonly ttlMs: number) {}
  private live(k: string) {
    const e = this.entries.get(k);
    if (e && Date.now() - e.at > this.ttlMs) this.entries.delete(k);
    return this.entries.get(k);
  }
  async get(k: string) {
    const e = this.live(k);
    return e ? { key: k, value: e.value, revision: e.revision, operation: 'PUT' } : null;
  }
  async put(k: string, value: Uint8Array) {
    this.entries.set(k, { value, revision: ++this.rev, at: Date.now() });
    return this.rev;
  }
  async create(k: string, value: Uint8Array) {
    if (this.live(k)) throw new Error('wrong last sequence: key exists');
    return this.put(k, value);
  }
  async update(k: string, value: Uint8Array, revision: number) {
    if (this.live(k)?.revision !== revision) throw new Error('wrong last sequence');
    return this.put(k, value);
  }
  async delete(k: string, opts?: { previousSeq?: number }) {
    if (opts?.previousSeq !== undefined && this.live(k)?.revision !== opts.previousSeq) throw new Error('wrong last sequence');
    this.entries.delete(k);
  }
  async keys(filter: string) {
    const prefix = filter.replace(/\*$/, '');
    const keys = [...this.entries.keys()].filter((k) => k.startsWith(prefix) && this.live(k));
    return (async function* () {
      yield* keys;
    })();
  }
}

/** Long enough that a renewal is not late on a loaded machine (at 300 ms, a load average of 10 once lost a healthy replica its leases). */
const TTL = 1_000;
/** Polls until `check` holds or the deadline passes (then fails with `what`). */
async function until(what: string, check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A replica's view of the bucket that can be cut off (network partition, NATS unreachable). */
function cutOff(kv: FakeKv) {
  const state = { dead: false };
  const proxy = new Proxy(kv, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => (state.dead ? Promise.reject(new Error('connection lost')) : (v as (...a: unknown[]) => unknown).apply(target, args));
    },
  });
  return { kv: proxy, state };
}

function replica(kv: FakeKv, id: string, workConnected?: () => Promise<boolean>) {
  const owned = new Set<number>();
  const events: string[] = [];
  const leases = new PartitionLeases(
    kv as unknown as KV,
    { partitions: 8, ttlMs: TTL, replicaId: id, names: new Names(''), workConnected },
    {
      acquired: async (p, fence) => void (owned.add(p), events.push(`+${p}:${fence}`)),
      lost: async (p) => void (owned.delete(p), events.push(`lost ${p}`)),
      releasing: async (p) => void (owned.delete(p), events.push(`-${p}`)),
    },
    pino({ level: 'silent' }),
  );
  return { leases, owned, events };
}

describe('PartitionLeases', () => {
  it('shares partitions fairly, takes over a dead replica within the TTL, and gives a newcomer its share', async () => {
    const kv = new FakeKv(TTL);
    const a = replica(kv, 'a');
    const link = cutOff(kv);
    const b = replica(link.kv, 'b');
    await a.leases.start();
    expect(a.owned.size).toBe(8);
    await b.leases.start();
    await until('an even split', () => a.owned.size === 4 && b.owned.size === 4);
    expect(new Set([...a.owned, ...b.owned]).size).toBe(8);

    // b is cut off: it stops its partitions at its next renewal, a takes them once the leases expire.
    link.state.dead = true;
    await until('b to stop its partitions', () => b.owned.size === 0);
    expect(b.events.filter((e) => e.startsWith('lost'))).toHaveLength(4);
    await until('a to take over', () => a.owned.size === 8);
    await b.leases.close();

    const c = replica(kv, 'c');
    await c.leases.start();
    await until('the newcomer share', () => a.owned.size === 4 && c.owned.size === 4);
    // A clean shutdown hands everything back at once.
    await c.leases.close();
    await until('the hand-back', () => a.owned.size === 8);
    await a.leases.close();
    expect(a.events.filter((e) => e.startsWith('lost'))).toEqual([]);
  });

  it('gives up its partitions while its work connection is down, though its lease connection still answers', async () => {
    const kv = new FakeKv(TTL);
    const a = replica(kv, 'a');
    const work = { up: true };
    const b = replica(kv, 'b', async () => work.up);
    await a.leases.start();
    await b.leases.start();
    await until('an even split', () => a.owned.size === 4 && b.owned.size === 4);

    work.up = false;
    await until('b to stop its partitions', () => b.owned.size === 0);
    expect(b.events.filter((e) => e.startsWith('lost'))).toHaveLength(4);
    await until('a to take over', () => a.owned.size === 8);

    work.up = true;
    await until('b back with its share', () => a.owned.size === 4 && b.owned.size === 4);
    await b.leases.close();
    await a.leases.close();
  });
});
