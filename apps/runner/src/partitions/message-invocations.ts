import type { InvocationMessage } from '@app/contracts';

/** How a message's invocations ended: all acknowledged, or some handed back (with the longest delay asked). */
export type MessageOutcome = { ack: true } | { nakDelayMs: number | undefined; finished: string[] };

/**
 * The invocations of one INVOCATIONS message as the partition's actors settle them: one, or the requests the api
 * stored together (apps/api/src/http-endpoints/ingest-batches.ts). The message is acknowledged once every one of
 * them is; when any is handed back, the message goes back to JetStream once all are settled, and `finished` names
 * the ones that did finish, so that this replica does not run them again when it returns (RanBefore).
 */
export class MessageInvocations {
  private nakDelayMs: number | undefined;
  private readonly finished: string[] = [];
  private readonly settled = new Set<number>();

  constructor(private readonly invocations: InvocationMessage[], private readonly onSettled: (outcome: MessageOutcome) => void) {}

  ack(index: number): void {
    if (!this.settle(index)) return;
    this.finished.push(this.invocations[index].invocationId);
    this.end();
  }

  nak(index: number, delayMs?: number): void {
    if (!this.settle(index)) return;
    if (delayMs !== undefined) this.nakDelayMs = Math.max(this.nakDelayMs ?? 0, delayMs);
    this.end();
  }

  private settle(index: number): boolean {
    if (this.settled.has(index)) return false;
    this.settled.add(index);
    return true;
  }

  private end(): void {
    if (this.settled.size < this.invocations.length) return;
    this.onSettled(this.finished.length < this.invocations.length ? { nakDelayMs: this.nakDelayMs, finished: this.finished } : { ack: true });
  }
}

/** The invocation list of a message: a plain invocation, or a JSON array of them (all of one source); undefined when it is neither. */
export function invocationsOf(decoded: unknown): InvocationMessage[] | undefined {
  const list = (Array.isArray(decoded) ? decoded : [decoded]) as InvocationMessage[];
  if (!list.length) return undefined;
  const sourceId = list[0]?.sourceId;
  return typeof sourceId === 'string' && list.every((m) => typeof m === 'object' && m !== null && m.sourceId === sourceId && typeof m.invocationId === 'string') ? list : undefined;
}

/**
 * Invocations this replica finished whose message it handed back for the sake of others in it: when the message
 * returns, they are acknowledged without running again. Remembered for `ttlMs`.
 */
export class RanBefore {
  private readonly ids = new Map<string, number>();

  constructor(private readonly ttlMs: number, private readonly now: () => number = Date.now) {}

  add(invocationIds: string[]): void {
    const now = this.now();
    if (this.ids.size > 10_000) for (const [id, until] of this.ids) if (until <= now) this.ids.delete(id);
    for (const id of invocationIds) this.ids.set(id, now + this.ttlMs);
  }

  /** Whether `invocationId` ran here before (forgotten once asked). */
  take(invocationId: string): boolean {
    const until = this.ids.get(invocationId);
    if (until === undefined) return false;
    this.ids.delete(invocationId);
    return until > this.now();
  }
}
