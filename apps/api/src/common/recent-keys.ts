/**
 * Keys remembered until they expire, `max` at most: past that the one remembered longest ago is forgotten first (adding a
 * key again makes it the most recent). Bounded so that keys anyone may make up (endpoint keys, API keys) cost a replica
 * no more memory than this, however many are sent.
 */
export class RecentKeys {
  private readonly expiries = new Map<string, number>();

  constructor(private readonly max: number) {}

  has(key: string, now = Date.now()): boolean {
    const expiresAt = this.expiries.get(key);
    if (expiresAt === undefined) return false;
    if (expiresAt > now) return true;
    this.expiries.delete(key);
    return false;
  }

  /** Remembers `key` until `expiresAt` (epoch ms; by default until forgotten for room). */
  add(key: string, expiresAt = Infinity): void {
    this.expiries.delete(key);
    if (this.expiries.size >= this.max) this.expiries.delete(this.expiries.keys().next().value as string);
    this.expiries.set(key, expiresAt);
  }

  delete(key: string): void {
    this.expiries.delete(key);
  }
}
