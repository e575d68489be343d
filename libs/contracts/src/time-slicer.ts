import { performance } from 'node:perf_hooks';

/** Work between two hand-backs of the event loop in a long synchronous job (see TimeSlicer). */
export const SLICE_MS = 10;

/**
 * Hands the event loop back, during a long job of many small steps, once SLICE_MS of work went by since the last
 * hand-back: one account's 60 MB of events — checked, encoded, parsed and indexed event by event — held the runner's
 * and the delivery app's threads for a second each, and every other account's requests waited behind them. A job of
 * small inputs (the usual one) never gets to a hand-back: a check of the clock per step is all it costs.
 *
 *     const slicer = new TimeSlicer();
 *     for (const x of items) { work(x); if (slicer.due()) await slicer.handBack(); }
 */
export class TimeSlicer {
  private since: number;

  /** `now`: the clock, in milliseconds (a test's own); `onHandBack`: called before each hand-back (the job is a long one). */
  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly onHandBack?: () => void,
  ) {
    this.since = now();
  }

  due(): boolean {
    return this.now() - this.since >= SLICE_MS;
  }

  /** Resumes after the I/O and timers that were waiting. */
  async handBack(): Promise<void> {
    this.onHandBack?.();
    await new Promise<void>((r) => setImmediate(r));
    this.since = this.now();
  }
}

/** `items` mapped by `step`, handing the event loop back between steps as TimeSlicer does. */
export async function mapSliced<T, U>(items: readonly T[], step: (item: T, index: number) => U, slicer = new TimeSlicer()): Promise<U[]> {
  const out: U[] = [];
  for (let i = 0; i < items.length; i++) {
    out.push(step(items[i], i));
    if (slicer.due()) await slicer.handBack();
  }
  return out;
}
