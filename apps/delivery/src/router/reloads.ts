const ignore = (): void => undefined;

/**
 * When an in-memory copy of database rows is read again. `changed()` after a change was announced: readers wait
 * for it (`current()`), so that a removed subscription or membership stops routing at once. `periodic()` is the
 * safety net for a missed announcement: readers go on with the copy they have, so a long read (seconds with
 * hundreds of thousands of subscriptions) never holds up routing, and a read already under way serves it. Changes
 * announced during a read are served by one more read after it (it may have read before them), shared by all of them.
 */
export class Reloads {
  private running?: Promise<void>;
  private again?: Promise<void>;
  private awaited?: Promise<void>;
  /** How long the last read took (ms). */
  lastMs = 0;

  constructor(private readonly read: () => Promise<void>) {}

  /** A change was announced: resolves once a read that began after it has finished. */
  changed(): Promise<void> {
    const p = this.load();
    this.awaited = p;
    const done = (): void => {
      if (this.awaited === p) this.awaited = undefined;
    };
    p.then(done, done);
    return p;
  }

  /** A read as the safety net (one in progress will do: it began after any announcement it could have missed); nobody waits for it but its caller. */
  periodic(): Promise<void> {
    return this.running ?? this.load();
  }

  /** When the next periodic read is due: `minMs` after the last, or longer, so that reads take at most 1/`share` of the time. */
  periodicDelayMs(minMs: number, share = 20): number {
    return Math.max(minMs, share * this.lastMs);
  }

  /**
   * Resolves once every change announced before the call has been read (rejects once if that read failed: the old
   * copy stays). Not those announced later: a stream of changes never holds a reader for more than two reads.
   */
  async current(): Promise<void> {
    await this.awaited;
  }

  private load(): Promise<void> {
    if (!this.running) {
      const started = Date.now();
      const run = this.read().finally(() => {
        this.lastMs = Date.now() - started;
        this.running = undefined;
      });
      this.running = run;
      return run;
    }
    this.again ??= this.running.then(ignore, ignore).then(() => {
      this.again = undefined;
      return this.load();
    });
    return this.again;
  }
}
