/**
 * What the workflow runs of each account in progress on this runner hold in its memory: every step's `$.send.*`
 * payloads, return value and exports, kept until the run's events and sends are published. Each run is bounded on
 * its own, but an account may have hundreds of runs waiting in a later step (a step that sleeps), and 80 runs of 45
 * MB of sends each once held 3.6 GB of the runner every account's runs share. Bounded per account.
 */
/** What one run holds of its account's `HeldBudget`: taken step by step, given back all at once (`release`, idempotent). */
export interface HeldShare {
  readonly maxBytes: number;
  take(bytes: number): boolean;
  release(): void;
}

export class HeldBudget {
  private readonly held = new Map<string, number>();

  constructor(readonly maxBytes: number) {}

  /** Takes `bytes` for `account`; false (nothing taken) when that would hold more than `maxBytes`. */
  take(account: string, bytes: number): boolean {
    const now = (this.held.get(account) ?? 0) + bytes;
    if (now > this.maxBytes) return false;
    this.held.set(account, now);
    return true;
  }

  release(account: string, bytes: number): void {
    const left = (this.held.get(account) ?? 0) - bytes;
    if (left > 0) this.held.set(account, left);
    else this.held.delete(account);
  }

  /** A run's share of `account`'s room, for its handler to give back in a `finally`, however the run ends. */
  share(account: string): HeldShare {
    let held = 0;
    return {
      maxBytes: this.maxBytes,
      take: (bytes) => {
        if (!this.take(account, bytes)) return false;
        held += bytes;
        return true;
      },
      release: () => {
        this.release(account, held);
        held = 0;
      },
    };
  }
}
