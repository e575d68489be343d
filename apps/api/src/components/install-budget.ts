import { InstallRefusedError } from '@app/sandbox';

const DAY_MS = 24 * 3600 * 1000;

/**
 * NPM_INSTALLS_PER_DAY_PER_ACCOUNT on this api replica: how many dependency sets this machine did not have yet an
 * account's component reads may install in any 24 hours (each runs npm and keeps its packages on disk). Sets
 * already installed, by anyone, are free. Kept in memory: per replica, since it started.
 */
export class InstallBudget {
  private readonly installs = new Map<string, number[]>();

  constructor(private readonly limit: number, private readonly now: () => number = Date.now) {}

  /** Counts one install of `account`'s, or throws InstallRefusedError saying when the oldest one leaves the window. */
  admit(account: string): void {
    if (!this.limit) return;
    const now = this.now();
    const recent = (this.installs.get(account) ?? []).filter((at) => at > now - DAY_MS);
    this.installs.set(account, recent);
    if (recent.length >= this.limit) {
      const retryAfter = Math.max(1, Math.ceil((recent[0] + DAY_MS - now) / 1000));
      throw new InstallRefusedError(`this account's components installed ${recent.length} new npm dependency sets in the last 24 hours, the most NPM_INSTALLS_PER_DAY_PER_ACCOUNT allows; imports already installed still work`, retryAfter);
    }
    recent.push(now);
  }
}
