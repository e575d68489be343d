/**
 * One scheduler for every timer on a replica: a binary min-heap of due times
 * and a single `setTimeout` for the earliest, so 10,000 timer sources cost
 * 10,000 heap entries, not 10,000 Node timers. Cancelling is lazy (a
 * generation number per key).
 */
interface Entry {
  atMs: number;
  key: string;
  gen: number;
}

export type TimerCallback = (key: string, atMs: number) => void;

export class TimerHeap {
  private heap: Entry[] = [];
  private readonly gens = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private armedAt = Infinity;
  private stopped = false;

  constructor(private readonly onDue: TimerCallback, private readonly now: () => number = Date.now) {}

  /** Schedules (or reschedules) `key` at `atMs`, replacing any earlier schedule of it. */
  schedule(key: string, atMs: number): void {
    const gen = (this.gens.get(key) ?? 0) + 1;
    this.gens.set(key, gen);
    this.push({ atMs, key, gen });
    if (atMs < this.armedAt) this.arm();
  }

  cancel(key: string): void {
    if (this.gens.has(key)) this.gens.delete(key);
  }

  get size(): number {
    return this.gens.size;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.heap = [];
    this.gens.clear();
  }

  private arm(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedAt = Infinity;
    this.dropStale();
    const head = this.heap[0];
    if (!head) return;
    this.armedAt = head.atMs;
    // setTimeout caps at ~24.8 days; re-arm on wake-up when further.
    const delay = Math.min(Math.max(0, head.atMs - this.now()), 2 ** 31 - 1);
    this.timer = setTimeout(() => this.fire(), delay);
    this.timer.unref?.();
  }

  private fire(): void {
    this.timer = undefined;
    this.armedAt = Infinity;
    const now = this.now();
    for (;;) {
      this.dropStale();
      const head = this.heap[0];
      if (!head || head.atMs > now) break;
      this.pop();
      this.gens.delete(head.key);
      try {
        this.onDue(head.key, head.atMs);
      } catch {
        // A failing callback must not stop the other timers.
      }
    }
    this.arm();
  }

  private dropStale(): void {
    while (this.heap.length && this.gens.get(this.heap[0].key) !== this.heap[0].gen) this.pop();
  }

  private push(e: Entry): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p].atMs <= h[i].atMs) break;
      [h[p], h[i]] = [h[i], h[p]];
      i = p;
    }
  }

  private pop(): Entry | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length && last) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && h[l].atMs < h[m].atMs) m = l;
        if (r < h.length && h[r].atMs < h[m].atMs) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i], h[m]];
        i = m;
      }
    }
    return top;
  }
}
