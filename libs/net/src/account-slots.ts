/** How many of something (lookups by name in progress) each account has at once, within a bound. */
export class AccountSlots {
  private readonly held = new Map<string, number>();
  /** Per account, the ones waiting for its slots (`wait`), first come first served. */
  private readonly waiting = new Map<string, (() => void)[]>();

  constructor(readonly max: number) {}

  /** Takes one of `owner`'s slots; false (and takes nothing) when it holds `max` already. */
  take(owner: string): boolean {
    const n = this.held.get(owner) ?? 0;
    if (n >= this.max) return false;
    this.held.set(owner, n + 1);
    return true;
  }

  /** Resolves once one of `owner`'s slots is taken: at once while it holds fewer than `max`, else when one it holds is released. */
  wait(owner: string): Promise<void> {
    if (this.take(owner)) return Promise.resolve();
    return new Promise((resolve) => {
      const queue = this.waiting.get(owner);
      if (queue) queue.push(resolve);
      else this.waiting.set(owner, [resolve]);
    });
  }

  /** Gives back one of `owner`'s slots: to the first of its waiters, if any. */
  release(owner: string): void {
    const queue = this.waiting.get(owner);
    const next = queue?.shift();
    if (next) {
      if (!queue!.length) this.waiting.delete(owner);
      return next();
    }
    const n = (this.held.get(owner) ?? 0) - 1;
    if (n > 0) this.held.set(owner, n);
    else this.held.delete(owner);
  }
}
