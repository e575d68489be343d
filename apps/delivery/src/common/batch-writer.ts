/**
 * Gathers items for a few milliseconds (or until `maxItems`) and writes them
 * with one call of `write`; `add` resolves once its batch is committed (or
 * rejects with the batch's error), so callers ack only after their row is durable.
 * Batches are written one after another, in order.
 */
export class BatchWriter<T> {
  private pending: { item: T; done: (e?: Error) => void }[] = [];
  private timer?: NodeJS.Timeout;
  private flushing = Promise.resolve();

  constructor(private readonly write: (items: T[]) => Promise<void>, private readonly opts: { maxItems: number; lingerMs: number }) {}

  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ item, done: (e) => (e ? reject(e) : resolve()) });
      this.schedule(this.pending.length >= this.opts.maxItems ? 0 : this.opts.lingerMs);
    });
  }

  /** Writes everything added so far without waiting out the linger; resolves once it is written (or failed). */
  async flushNow(): Promise<void> {
    while (this.pending.length) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.flushing = this.flushing.then(() => this.flush());
      await this.flushing;
    }
    await this.flushing;
  }

  /** Resolves when the batch being written (if any) is done. */
  idle(): Promise<void> {
    return this.flushing;
  }

  private schedule(ms: number): void {
    if (this.timer && ms > 0) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flushing = this.flushing.then(() => this.flush());
    }, ms);
  }

  private async flush(): Promise<void> {
    const batch = this.pending.splice(0, this.opts.maxItems);
    if (!batch.length) return;
    try {
      await this.write(batch.map((b) => b.item));
      for (const b of batch) b.done();
    } catch (e) {
      for (const b of batch) b.done(e as Error);
    }
    if (this.pending.length) this.schedule(0);
  }
}
