import type { DeleteEventsMessage } from '@app/contracts';

/** Deletions of one account that may wait on an api replica while one of its deletions runs. */
export const DELETIONS_WAITING_PER_ACCOUNT = 16;

/** One `DELETE /sources/{id}/events` as it waits (what the delivery app is asked, and where EMITS ends for it): equal requests (same source and range) are one deletion. */
export interface Deletion extends DeleteEventsMessage {
  /** The last EMITS sequence when the (newest equal) request came: later events are not the ones it deletes. */
  lastSeq: number;
}

const sameRequest = (a: Deletion, b: Deletion): boolean => a.emitterId === b.emitterId && a.startId === b.startId && a.endId === b.endId;

/**
 * The background deletions of every account on this api replica: one at a time per account, in the order they came,
 * at most `waitingMax` waiting behind it. A request equal to one still waiting joins it (its `lastSeq` moves up to the
 * newer request's), so a client asking again is never refused. Accounts do not wait for each other.
 */
export class DeletionLanes {
  private readonly lanes = new Map<string, Deletion[]>();
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly waitingMax: number, private readonly perform: (d: Deletion) => Promise<void>) {}

  /** Takes the deletion; false when the account already has `waitingMax` other deletions waiting. */
  offer(ownerId: string, deletion: Deletion): boolean {
    const lane = this.lanes.get(ownerId);
    if (!lane) {
      this.lanes.set(ownerId, [deletion]);
      const run = this.run(ownerId).finally(() => this.running.delete(run));
      this.running.add(run);
      return true;
    }
    // lane[0] is running: only those behind it can be joined.
    const waiting = lane.slice(1).find((d) => sameRequest(d, deletion));
    if (waiting) {
      waiting.lastSeq = Math.max(waiting.lastSeq, deletion.lastSeq);
      return true;
    }
    if (lane.length - 1 >= this.waitingMax) return false;
    lane.push(deletion);
    return true;
  }

  /** Resolves once every deletion taken has been performed, or after `timeoutMs`. */
  async idle(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)));
    const all = (async () => {
      while (this.running.size) await Promise.all([...this.running]);
    })();
    await Promise.race([all, timeout]).finally(() => clearTimeout(timer));
  }

  private async run(ownerId: string): Promise<void> {
    const lane = this.lanes.get(ownerId) as Deletion[];
    while (lane.length) {
      await this.perform(lane[0]).catch(() => undefined);
      lane.shift();
    }
    this.lanes.delete(ownerId);
  }
}
