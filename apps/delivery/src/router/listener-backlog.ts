import { NatsService, subjectCounts } from '@app/nats';

/** How often the invocations waiting in INVOCATIONS are read again. */
export const LISTENER_BACKLOG_READ_MS = 1_000;
/** Listeners whose owner is remembered; past this many the memory starts over. */
const OWNERS_MAX = 100_000;

/**
 * The invocations waiting in INVOCATIONS for each account's listener sources and workflows, as the router starts
 * them from subscriptions. The api bounds what an account's HTTP requests and runs add (INGEST_MAX_PENDING_PER_ACCOUNT,
 * a 429 past it); a subscription has no sender to refuse, and one request to a source that emits 10,000 events to
 * five listeners stored 50,000 invocations in one partition: more than a runner's partition consumer may have
 * outstanding (its `max_ack_pending`), so JetStream handed out nothing behind them and another account's source on
 * that partition stopped running. Past the bound the router starts no more runs of the account's listeners: the
 * event is not given to them (counted and logged), as a full queue does to a throttled workflow.
 *
 * Counted from the stream's messages per subject (`inv.<partition>.<listenerId>`, read every second) for the
 * listeners the router has routed to, plus what it started since the last read.
 */
export class ListenerBacklog {
  private readonly owners = new Map<string, string>();
  private waiting = new Map<string, number>();
  private readonly startedSinceRead = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private reading = false;

  constructor(
    private readonly nats: NatsService,
    /** Invocations waiting per account past which no more are started (0: no bound). */
    private readonly maxPerAccount: number,
    private readonly onReadError: (e: Error) => void,
  ) {}

  start(): void {
    if (this.maxPerAccount <= 0 || this.timer) return;
    this.timer = setInterval(() => void this.read(), LISTENER_BACKLOG_READ_MS);
    this.timer.unref?.();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Whether a run of `listenerId` (owned by `owner`) may be started now; counts it at once when it may (the runs of a
   * batch of events are decided before any of them is stored).
   */
  admit(listenerId: string, owner: string): boolean {
    if (this.maxPerAccount <= 0) return true;
    const started = this.startedSinceRead.get(owner) ?? 0;
    if ((this.waiting.get(owner) ?? 0) + started >= this.maxPerAccount) return false;
    if (!this.owners.has(listenerId)) {
      if (this.owners.size >= OWNERS_MAX) this.owners.clear();
      this.owners.set(listenerId, owner);
    }
    this.startedSinceRead.set(owner, started + 1);
    return true;
  }

  /** Reads the stream's counts again (exposed for tests). */
  async read(): Promise<void> {
    // No run of a listener started yet: nothing to count (the stream's subjects are not read for nothing).
    if (this.reading || !this.owners.size) return;
    this.reading = true;
    try {
      const names = this.nats.names;
      // Runs started while the stream is read may be missing from its counts: they stay counted after it.
      const before = new Map(this.startedSinceRead);
      const info = await this.nats.jsm.streams.info(names.invocationsStream, { subjects_filter: names.allInvocations });
      const waiting = new Map<string, number>();
      for (const [id, n] of subjectCounts(info.state.subjects ?? {})) {
        const owner = this.owners.get(id);
        if (owner) waiting.set(owner, (waiting.get(owner) ?? 0) + n);
      }
      this.waiting = waiting;
      for (const [owner, n] of [...this.startedSinceRead]) {
        const since = n - (before.get(owner) ?? 0);
        if (since > 0) this.startedSinceRead.set(owner, since);
        else this.startedSinceRead.delete(owner);
      }
    } catch (e) {
      this.onReadError(e as Error);
    } finally {
      this.reading = false;
    }
  }
}
