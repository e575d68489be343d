/** How many of something (lookups by name in progress) each account has at once, within a bound. */
export class AccountSlots {
  private readonly held = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Takes one of `owner`'s slots; false (and takes nothing) when it holds `max` already. */
  take(owner: string): boolean {
    const n = this.held.get(owner) ?? 0;
    if (n >= this.max) return false;
    this.held.set(owner, n + 1);
    return true;
  }

  release(owner: string): void {
    const n = (this.held.get(owner) ?? 0) - 1;
    if (n > 0) this.held.set(owner, n);
    else this.held.delete(owner);
  }
}
