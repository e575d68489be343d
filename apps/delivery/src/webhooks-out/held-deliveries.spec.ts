import { DeliveryItem, directItem } from './delivery-item';
import { HeldDeliveries } from './held-deliveries';

const stream = (webhookId: string): DeliveryItem =>
  ({ webhookId, direct: false, deliveryCount: 1, read: () => { throw new Error('unused'); }, ack: () => undefined, nak: () => undefined, term: () => undefined, working: () => undefined });
const direct = (webhookId: string): DeliveryItem =>
  directItem({ webhookId, subscriptionId: 's', event: { id: 'e', emitterId: 'dc_x', event: null } } as never, 1).item;

describe('HeldDeliveries', () => {
  it('counts messages and direct events apart, per owner, and forgets what is released', () => {
    const held = new HeldDeliveries({ stream: 8, direct: 4, share: 1 / 4 });
    const [m1, m2, d1] = [stream('w1'), stream('w2'), direct('w1')];
    held.add(m1, 'a');
    held.add(m2, '');
    held.add(d1, 'a');
    expect([held.size, held.messages, held.direct]).toEqual([3, 2, 1]);
    held.release(m1);
    held.release(m1); // twice: no effect
    expect([held.size, held.messages, held.direct]).toEqual([2, 1, 1]);
  });

  it("counts each owner's messages (WEBHOOK_HELD_PER_ACCOUNT), not its direct events", () => {
    const held = new HeldDeliveries({ stream: 8, direct: 4, share: 1 / 4 });
    const [m1, m2, d1] = [stream('w1'), stream('w2'), direct('w1')];
    [m1, m2, d1].forEach((m) => held.add(m, 'a'));
    held.add(stream('w3'), 'b');
    expect([held.messagesOf('a'), held.messagesOf('b'), held.messagesOf('c')]).toEqual([2, 1, 0]);
    held.release(m2);
    expect(held.messagesOf('a')).toBe(1);
  });

  it("fills an owner only past its share while less than a share of the room is free", () => {
    const held = new HeldDeliveries({ stream: 8, direct: 4, share: 1 / 4 });
    for (let i = 0; i < 5; i++) held.add(stream(`a${i}`), 'a');
    expect(held.ownerFull('a', false)).toBe(false); // 3 of 8 free: more than a share (2)
    held.add(stream('b0'), 'b');
    held.add(stream('b1'), 'b');
    expect(held.ownerFull('a', false)).toBe(true); // 1 free
    expect(held.ownerFull('b', false)).toBe(true); // b holds its share (2) too
    expect(held.ownerFull('c', false)).toBe(false); // holds nothing
    expect(held.ownerFull(undefined, false)).toBe(false);
    expect(held.ownerFull('a', true)).toBe(false); // direct room apart
  });
});
