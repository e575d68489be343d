import type { KV } from 'nats';

/**
 * Takes or renews a lease held as a key of KV `leases` (whose bucket TTL ends
 * a lease nobody renews): true while this replica holds it, false when another
 * replica does or a concurrent writer won the compare-and-set.
 */
export async function holdKvLease(leases: KV, key: string, replicaId: string): Promise<boolean> {
  const value = new TextEncoder().encode(replicaId);
  try {
    const entry = await leases.get(key);
    if (entry && entry.operation === 'PUT' && entry.string() !== replicaId) return false;
    if (entry) await leases.update(key, value, entry.revision);
    else await leases.create(key, value);
    return true;
  } catch {
    return false;
  }
}
