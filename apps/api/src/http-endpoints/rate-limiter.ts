/**
 * Token buckets per key (an HTTP endpoint): `ratePerSec` tokens per second up
 * to `burst`. In memory per api replica, so N replicas allow up to N times the
 * rate; idle buckets are swept.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private lastSweep = 0;

  constructor(private readonly ratePerSec: number, private readonly burst: number, private readonly now: () => number = Date.now) {}

  /** 0 when allowed, else the seconds to wait before a retry. */
  take(key: string): number {
    if (this.ratePerSec <= 0) return 0;
    const now = this.now();
    this.sweep(now);
    const b = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.ratePerSec);
    b.at = now;
    this.buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.ratePerSec));
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    const full = (this.burst / this.ratePerSec) * 1000;
    for (const [k, b] of this.buckets) if (now - b.at > full) this.buckets.delete(k);
  }
}
