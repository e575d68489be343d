/** How many items an OwnerLanes runs and holds. */
export interface OwnerLanesRoom {
  /** Items running at once. */
  concurrency: number;
  /** Items of one owner running at once. */
  perOwner: number;
  /** Items of one owner waiting for their turn. */
  waitingPerOwner: number;
  /** Items waiting, all owners together; past it only an owner with nothing waiting and a free slot gets one in. */
  waitingMax: number;
}

interface Lane<T> {
  waiting: T[];
  active: number;
  /** When the lane last started an item (a count of starts); a new lane has had no turn. */
  turn: number;
}

/**
 * Runs items with a bounded concurrency, at most `perOwner` of one owner at once, owners taking turns for the free
 * slots (round robin): one owner's slow items never hold another's. `offer` refuses an item it has no room for (the
 * caller keeps it elsewhere), so the caller never waits behind one owner's backlog.
 */
export class OwnerLanes<T> {
  private readonly lanes = new Map<string, Lane<T>>();
  private waiting = 0;
  private active = 0;
  private turns = 0;

  constructor(private readonly room: OwnerLanesRoom, private readonly run: (item: T) => Promise<void>) {}

  /** Takes the item to run in the owner's turn, or returns false when there is no room for it. */
  offer(owner: string, item: T): boolean {
    const lane = this.lanes.get(owner) ?? { waiting: [], active: 0, turn: 0 };
    if (lane.waiting.length >= this.room.waitingPerOwner) return false;
    if (this.waiting >= this.room.waitingMax && (lane.waiting.length > 0 || lane.active >= this.room.perOwner)) return false;
    lane.waiting.push(item);
    this.waiting++;
    this.lanes.set(owner, lane);
    this.pump();
    return true;
  }

  /** Items running now. */
  get running(): number {
    return this.active;
  }

  /** Calls `fn` for each waiting item. */
  forEachWaiting(fn: (item: T) => void): void {
    for (const lane of this.lanes.values()) lane.waiting.forEach(fn);
  }

  /** Removes and returns every waiting item (shutting down). */
  drain(): T[] {
    const out: T[] = [];
    for (const lane of this.lanes.values()) out.push(...lane.waiting.splice(0));
    this.waiting = 0;
    return out;
  }

  private pump(): void {
    while (this.active < this.room.concurrency) {
      const next = this.nextLane();
      if (!next) return;
      const [owner, lane] = next;
      lane.turn = ++this.turns;
      const item = lane.waiting.shift()!;
      this.waiting--;
      lane.active++;
      this.active++;
      void this.run(item)
        .catch(() => undefined)
        .finally(() => {
          lane.active--;
          this.active--;
          if (lane.active === 0 && lane.waiting.length === 0 && this.lanes.get(owner) === lane) this.lanes.delete(owner);
          this.pump();
        });
    }
  }

  /** The lane that had its turn longest ago among those with an item waiting and a free slot. */
  private nextLane(): [string, Lane<T>] | undefined {
    let best: [string, Lane<T>] | undefined;
    for (const entry of this.lanes) {
      const lane = entry[1];
      if (lane.waiting.length && lane.active < this.room.perOwner && (!best || lane.turn < best[1].turn)) best = entry;
    }
    return best;
  }
}
