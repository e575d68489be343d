interface Bucket {
  tokens: number;
  atMs: number;
}

/** Buckets kept at most before the full ones (accounts that used nothing lately) are dropped. */
const BUCKETS_MAX = 10_000;

/**
 * A token bucket per account: `perSecond` of something (events, bytes), after a burst of `burst`. Over it the caller
 * waits (`take` says how long); what is taken beyond the budget is owed, so the account's next takes wait behind it.
 * The runner's EMITS_*_PER_SECOND_PER_ACCOUNT (emit-budget.ts) and the egress proxies' SANDBOX_EGRESS_BYTES_PER_SECOND,
 * SANDBOX_EGRESS_CONNECTS_PER_SECOND and SANDBOX_EGRESS_REFUSED_PER_SECOND.
 */
export class RateBudget {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    // Monotonic: a wall clock set back by minutes made every account owe minutes of events.
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Takes `n` of `owner`'s budget; returns how long to wait (ms) before using them, 0 when within it. What is taken
   * beyond the budget is owed: the next take of the account waits for it too, so an account's uses wait in turn.
   */
  take(owner: string, n: number): number {
    if (this.perSecond <= 0 || n <= 0) return 0;
    const now = this.now();
    const b = this.refilled(owner, now);
    b.tokens -= n;
    return b.tokens >= 0 ? 0 : Math.ceil((-b.tokens * 1000) / this.perSecond);
  }

  /** How long until `owner`'s takes no longer wait (ms; 0 when it owes nothing). Takes nothing. */
  owedMs(owner: string): number {
    return this.waitMs(owner, 0);
  }

  /** How long until `owner` has `n` left to take without waiting (ms; 0 when it has them now). Takes nothing. */
  waitMs(owner: string, n: number): number {
    if (this.perSecond <= 0) return 0;
    const b = this.buckets.get(owner);
    const tokens = b ? Math.min(this.burst, b.tokens + (Math.max(0, this.now() - b.atMs) * this.perSecond) / 1000) : this.burst;
    return tokens >= n ? 0 : Math.ceil(((n - tokens) * 1000) / this.perSecond);
  }

  private refilled(owner: string, now: number): Bucket {
    let b = this.buckets.get(owner);
    if (!b) {
      if (this.buckets.size >= BUCKETS_MAX) this.dropFull(now);
      this.buckets.set(owner, (b = { tokens: this.burst, atMs: now }));
      return b;
    }
    b.tokens = Math.min(this.burst, b.tokens + (Math.max(0, now - b.atMs) * this.perSecond) / 1000);
    b.atMs = now;
    return b;
  }

  private dropFull(now: number): void {
    for (const [owner, b] of this.buckets) if (b.tokens + ((now - b.atMs) * this.perSecond) / 1000 >= this.burst) this.buckets.delete(owner);
  }
}
