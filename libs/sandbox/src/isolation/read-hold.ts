import type { Socket } from 'node:net';

/**
 * Holds back the reading of a sandbox's channel for as long as the app asks (`pauseMs`, checked after each read).
 * The runner asks while the account's events wait for its EMITS_*_PER_SECOND_PER_ACCOUNT budgets: a source runs one
 * invocation at a time, but each of an account's sources held a result of up to 64 MiB in the runner while its events
 * waited, and an account with enough sources of large emits held the runner's whole heap until it died. Unread,
 * what the sandbox sends waits in the sandbox (its writes wait, and count against its SANDBOX_MEMORY_MB).
 */
export class ReadHold {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly channel: Socket,
    private readonly pauseMs: () => number,
    /** Called as reading resumes: the sandbox was not silent meanwhile, only unread. */
    private readonly resumed: () => void,
  ) {}

  get holding(): boolean {
    return this.timer !== undefined;
  }

  /** After a read: stops reading for as long as the app asks, then reads on (and asks again after the next read). */
  check(): void {
    if (this.timer) return;
    const ms = this.pauseMs();
    if (ms <= 0) return;
    this.channel.pause();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.resumed();
      this.channel.resume();
    }, ms);
    this.timer.unref();
  }

  /** The process is gone: what it sent and was never read is dropped with the channel. */
  stop(): void {
    if (!this.timer) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.channel.destroy();
  }
}
