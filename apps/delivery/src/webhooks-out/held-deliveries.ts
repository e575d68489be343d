import { DeliveryItem } from './delivery-item';

/**
 * The deliveries a sender holds (taken and not yet settled), each with the owner of its webhook ('' while the
 * webhook's owner is not loaded yet), counted per owner, DELIVERIES messages and direct events apart. An owner
 * is full when it holds more than `share` of a kind's room while less than a share of it is free: it takes no
 * more of that kind then (test/delivery-owner-share.e2e-spec.ts).
 */
export class HeldDeliveries {
  private readonly held = new Map<DeliveryItem, string>();
  private readonly owners = new Map<string, { stream: number; direct: number }>();
  /** How many of the held deliveries are direct events (the rest are DELIVERIES messages). */
  private directCount = 0;

  constructor(private readonly room: { stream: number; direct: number; share: number }) {}

  get size(): number {
    return this.held.size;
  }

  get direct(): number {
    return this.directCount;
  }

  /** DELIVERIES messages held. */
  get messages(): number {
    return this.held.size - this.directCount;
  }

  add(m: DeliveryItem, owner: string): void {
    this.held.set(m, owner);
    if (m.direct) this.directCount++;
    if (!owner) return;
    const n = this.owners.get(owner) ?? { stream: 0, direct: 0 };
    if (m.direct) n.direct++;
    else n.stream++;
    this.owners.set(owner, n);
  }

  /** Forgets a settled (or returned) delivery. */
  release(m: DeliveryItem): void {
    const owner = this.held.get(m);
    if (owner === undefined) return;
    this.held.delete(m);
    if (m.direct) this.directCount--;
    if (!owner) return;
    const n = this.owners.get(owner)!;
    if (m.direct) n.direct--;
    else n.stream--;
    if (n.direct === 0 && n.stream === 0) this.owners.delete(owner);
  }

  /** DELIVERIES messages of the owner's webhooks held. */
  messagesOf(owner: string): number {
    return this.owners.get(owner)?.stream ?? 0;
  }

  /** Whether the owner holds more than its share of the kind's room while less than a share is free (an unknown owner holds none). */
  ownerFull(owner: string | undefined, direct: boolean): boolean {
    const n = owner ? this.owners.get(owner) : undefined;
    if (!n) return false;
    const [mine, held, max] = direct ? [n.direct, this.directCount, this.room.direct] : [n.stream, this.messages, this.room.stream];
    const share = max * this.room.share;
    return mine >= share && max - held < share;
  }

  forEach(fn: (m: DeliveryItem) => void): void {
    for (const m of this.held.keys()) fn(m);
  }
}
