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

/** Look-ups of keys not known to a replica waiting for one of their connections at most; past this: `LaneFullError`. */
const UNKNOWN_KEYS_WAITING_MAX = 256;

/**
 * The lane where a replica looks up keys anyone may make up (an `/e/<key>` endpoint key, a `Bearer` API key) that it has
 * not found before: a quarter of its Postgres connections (`DB_POOL_MAX`), UNKNOWN_KEYS_WAITING_MAX more waiting, past
 * that `LaneFullError` (503 with Retry-After). Made-up keys sent as fast as the api answers them therefore leave the rest
 * of the pool to everything else.
 */
export function unknownKeysLane(dbPoolMax: number): BoundedLane {
  return new BoundedLane(Math.max(1, Math.floor(dbPoolMax / 4)), UNKNOWN_KEYS_WAITING_MAX);
}
