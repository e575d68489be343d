/** Too many tasks already wait for a lane: the caller is answered "retry later" instead of queueing. */
export class LaneFullError extends Error {}

/**
 * At most `concurrency` tasks at once; up to `maxWaiting` more wait their turn in order, and past that a task is
 * refused at once (`LaneFullError`).
 */
export class BoundedLane {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly concurrency: number, private readonly maxWaiting: number) {}

  get size(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.maxWaiting) throw new LaneFullError(`${this.waiting.length} tasks already wait`);
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await task();
    } finally {
      // The slot passes straight to the next waiter (running stays the same), or is given back.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
