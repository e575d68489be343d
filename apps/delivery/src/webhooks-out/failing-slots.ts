/**
 * Request slots of failing webhooks, per account: an account's webhooks whose last attempt here failed have at
 * most `maxPerOwner` attempts in flight together (an attempt holds its slot until its message is settled: the
 * POST, its attempt row and its retry written). A webhook waiting for a slot is woken when one of its account's
 * attempts ends, in turn with the account's other waiting webhooks. Why: an attempt that fails at once (a 500,
 * a refused connection) costs the process as much as a delivery, plus two rows written before its ack, and
 * 60 such webhooks at 64 requests each (3,840 in flight) kept the single event loop busy with one account's
 * failures: every other account's deliveries waited behind them (p50 10 ms → 200–275 ms). A webhook that fails
 * now and then is held only until its next success; a webhook alone keeps WEBHOOK_CONCURRENCY at the default.
 */
export class FailingSlots {
  private readonly owners = new Map<string, { active: number; waiting: Set<string> }>();

  constructor(private readonly maxPerOwner: number) {}

  /** Takes a slot for the owner's failing webhook, or notes the webhook as waiting and returns false. */
  take(owner: string, webhookId: string): boolean {
    const o = this.owners.get(owner) ?? { active: 0, waiting: new Set<string>() };
    this.owners.set(owner, o);
    if (o.active < this.maxPerOwner) {
      o.active++;
      return true;
    }
    o.waiting.delete(webhookId); // to the back of the turn
    o.waiting.add(webhookId);
    return false;
  }

  /** Gives a slot back (then `next` says whose turn it is). */
  release(owner: string): void {
    const o = this.owners.get(owner);
    if (!o) return;
    o.active--;
    if (o.active === 0 && !o.waiting.size) this.owners.delete(owner);
  }

  /** The owner's next waiting webhook while a slot is free (it leaves the turn: it waits again if it cannot take one). */
  next(owner: string): string | undefined {
    const o = this.owners.get(owner);
    if (!o || o.active >= this.maxPerOwner) return undefined;
    const [id] = o.waiting;
    if (id === undefined) return undefined;
    o.waiting.delete(id);
    if (o.active === 0 && !o.waiting.size) this.owners.delete(owner);
    return id;
  }

  /** Attempts at failing webhooks in flight, and accounts with a webhook waiting for a slot. */
  figures(): { inFlight: number; ownersWaiting: number } {
    let inFlight = 0;
    let ownersWaiting = 0;
    for (const o of this.owners.values()) {
      inFlight += o.active;
      if (o.waiting.size) ownersWaiting++;
    }
    return { inFlight, ownersWaiting };
  }
}
