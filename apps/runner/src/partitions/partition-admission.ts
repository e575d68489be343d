/** What a partition does with an invocation it received: hold it (the actor gets it) or hand it back for later. */
export type Admission = { hold: true; deferrals: number } | { hold: false; delayMs: number };

/** An invocation handed back for want of room returns after this long at first, twice as long each time it finds no room again… */
export const DEFER_MIN_MS = 200;
/** …up to this. */
export const DEFER_MAX_MS = 2_000;
/** One handed back because an earlier one of its source is out returns this long after that one is due. */
const AFTER_EARLIER_MS = 20;

interface Deferred {
  /** How many times this replica handed it back. */
  times: number;
  /** How many of those for want of room (the delay doubles with each). */
  noRoom: number;
  /** When it last came back (or was first handed back). */
  seenMs: number;
  /** When it is due back. */
  dueMs: number;
}

/**
 * Fairness between accounts, and between the sources of one account, inside one partition. A runner holds at
 * most `max` invocations of a partition un-acknowledged in memory (RUNNER_MAX_INFLIGHT_PER_PARTITION): once that
 * many were taken by one account's sources whose runs are slow (a `run` that waits a minute, behind it a backlog of
 * a thousand), the next invocation of every other source of the partition waited behind them, for as long as the
 * backlog took. Now an account, and a source, holding a quarter of the room takes no more while less than a quarter
 * is free: what it is not given is handed back to JetStream (a nak with a delay) and offered again later, and the
 * consumer reads on to the other sources' invocations. (JetStream's `max_ack_pending` is set well above `max`: the
 * invocations handed back wait there, not in the runner's memory.)
 *
 * A source's invocations still run in stream order: while some of them are handed back, none after them is held,
 * and one that returns is held only when no earlier one of its source is still out.
 */
export class PartitionAdmission {
  private total = 0;
  private readonly perOwner = new Map<string, number>();
  private readonly perSource = new Map<string, number>();
  /** Per source: the stream sequences handed back (ascending) and their bookkeeping. */
  private readonly deferred = new Map<string, { seqs: number[]; info: Map<number, Deferred> }>();
  private readonly share: number;

  /**
   * @param max invocations held at most
   * @param staleMs a handed-back invocation not seen again for this long is forgotten (removed from the stream
   *   meanwhile, or acknowledged by another replica), so it cannot hold back the later ones of its source
   */
  constructor(
    private readonly max: number,
    private readonly staleMs: number,
    // Monotonic: a wall clock set back would hold a source's invocations for as long.
    private readonly now: () => number = () => performance.now(),
  ) {
    this.share = Math.max(1, Math.floor(max / 4));
  }

  get held(): number {
    return this.total;
  }

  /** Decides for one invocation of `sourceId` (owned by `owner`) at stream sequence `seq`. A hold is released with `release`. */
  offer(sourceId: string, owner: string, seq: number): Admission {
    const out = this.deferred.get(sourceId);
    const mine = out?.info.get(seq);
    if (mine) mine.seenMs = this.now();
    if (out) this.forgetStale(sourceId, out);
    const first = out?.seqs[0];
    if (first !== undefined && seq > first) {
      // Not before the earliest of its source that is out: it comes back just after that one.
      const earliest = out?.info.get(first) as Deferred;
      return { hold: false, delayMs: this.defer(sourceId, seq, Math.min(DEFER_MAX_MS, Math.max(0, earliest.dueMs - this.now())) + AFTER_EARLIER_MS) };
    }
    if (!this.hasRoom(sourceId, owner)) {
      const noRoom = (mine?.noRoom ?? 0) + 1;
      return { hold: false, delayMs: this.defer(sourceId, seq, Math.min(DEFER_MAX_MS, DEFER_MIN_MS * 2 ** (noRoom - 1)), true) };
    }
    if (mine) this.remove(sourceId, seq);
    this.total++;
    this.perOwner.set(owner, (this.perOwner.get(owner) ?? 0) + 1);
    this.perSource.set(sourceId, (this.perSource.get(sourceId) ?? 0) + 1);
    return { hold: true, deferrals: mine?.times ?? 0 };
  }

  /** An invocation held by `offer` settled (acknowledged or handed back). */
  release(sourceId: string, owner: string): void {
    this.total = Math.max(0, this.total - 1);
    decrement(this.perOwner, owner);
    decrement(this.perSource, sourceId);
  }

  /** The source is gone from this partition (deleted, fenced): nothing of it is waited for. */
  forget(sourceId: string): void {
    this.deferred.delete(sourceId);
  }

  private hasRoom(sourceId: string, owner: string): boolean {
    if (this.total >= this.max) return false;
    if (this.max - this.total > this.share) return true;
    return (this.perOwner.get(owner) ?? 0) < this.share && (this.perSource.get(sourceId) ?? 0) < this.share;
  }

  /** Records `seq` of `sourceId` as handed back for `delayMs`; returns the delay. */
  private defer(sourceId: string, seq: number, delayMs: number, noRoom = false): number {
    let out = this.deferred.get(sourceId);
    if (!out) this.deferred.set(sourceId, (out = { seqs: [], info: new Map() }));
    let d = out.info.get(seq);
    if (!d) {
      d = { times: 0, noRoom: 0, seenMs: this.now(), dueMs: 0 };
      out.info.set(seq, d);
      out.seqs.splice(insertionPoint(out.seqs, seq), 0, seq);
    }
    d.times++;
    if (noRoom) d.noRoom++;
    d.dueMs = this.now() + delayMs;
    return delayMs;
  }

  private remove(sourceId: string, seq: number): void {
    const out = this.deferred.get(sourceId);
    if (!out) return;
    out.info.delete(seq);
    const i = insertionPoint(out.seqs, seq);
    if (out.seqs[i] === seq) out.seqs.splice(i, 1);
    if (!out.seqs.length) this.deferred.delete(sourceId);
  }

  private forgetStale(sourceId: string, out: { seqs: number[]; info: Map<number, Deferred> }): void {
    const now = this.now();
    while (out.seqs.length && now - (out.info.get(out.seqs[0])?.seenMs ?? 0) > this.staleMs) this.remove(sourceId, out.seqs[0]);
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 0) - 1;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}

/** Index of the first element of ascending `xs` not below `x`. */
function insertionPoint(xs: number[], x: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
