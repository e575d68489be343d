/**
 * A webhook's deliveries waiting for one of its request slots, in two FIFO queues: events
 * the router handed over directly (their emits wait unacknowledged) and DELIVERIES messages.
 * While both hold work, `DIRECT_SHARE` of every `DIRECT_SHARE + 1` slots go to direct events,
 * the rest to messages, so messages never starve. Why two queues: under a sustained load a
 * single queue filled with DELIVERIES messages once the router had to queue some there, which
 * kept the webhook "busy" and sent every later event through DELIVERIES too (an extra JetStream
 * store, delivery and acknowledgement per event at exactly the moment CPU is short). Why
 * direct events first: every slot a message takes while direct events wait makes room for one
 * more message (the router queues the event it cannot hand over), so an even split would keep
 * a share of every later event on the longer path for as long as the load lasts.
 */
export const DIRECT_SHARE = 15;

/** A lane's room for direct events: at least two router batches (500 each)… */
export const DIRECT_LANE_MIN = 1000;
/** …or what the webhook drains in this long at its average latency, whichever is more. */
export const DIRECT_LANE_DRAIN_MS = 5000;

/**
 * How many direct events a webhook's lane may hold (DELIVERIES messages waiting beside them do not count):
 * DIRECT_LANE_MIN, or more for a fast webhook, up to `max`. A fast webhook under a sustained load so keeps
 * every event on the direct path, in order; with a fixed 1,000 its overflow went through DELIVERIES, waited
 * there behind the direct events (1 request slot in DIRECT_SHARE + 1), and made the tail of the latency
 * seconds long (p99 2.5–3.2 s instead of 0.4 s for one hot source, docs/benchmarks.md).
 */
export function directLaneMax(avgLatencyMs: number, concurrency: number, max: number): number {
  const drained = (concurrency * DIRECT_LANE_DRAIN_MS) / Math.max(1, avgLatencyMs);
  return Math.round(Math.min(max, Math.max(DIRECT_LANE_MIN, drained)));
}

export class LaneQueue<T> {
  private readonly direct: T[] = [];
  private readonly stream: T[] = [];
  /** Direct items taken in a row while messages waited. */
  private run = 0;

  get length(): number {
    return this.direct.length + this.stream.length;
  }

  /** Direct events waiting (not in flight). */
  get directLength(): number {
    return this.direct.length;
  }

  push(item: T, direct: boolean): void {
    (direct ? this.direct : this.stream).push(item);
  }

  /** The next item to send. */
  shift(): T | undefined {
    if (this.direct.length && (this.run < DIRECT_SHARE || !this.stream.length)) {
      this.run = this.stream.length ? this.run + 1 : 0;
      return this.direct.shift();
    }
    this.run = 0;
    return this.stream.shift();
  }

  /** Removes and returns everything waiting. */
  drain(): T[] {
    return [...this.direct.splice(0), ...this.stream.splice(0)];
  }

  /** Removes and returns the direct events waiting. */
  drainDirect(): T[] {
    return this.direct.splice(0);
  }

  /** Removes and returns the newest items beyond the first `keep` (messages first, then direct events). */
  excess(keep: number): T[] {
    const over = this.length - keep;
    if (over <= 0) return [];
    const fromStream = this.stream.splice(Math.max(0, this.stream.length - over));
    return [...fromStream, ...this.direct.splice(Math.max(0, this.direct.length - (over - fromStream.length)))];
  }
}
