import { FailingSlots } from './failing-slots';

describe('FailingSlots', () => {
  it("bounds an account's attempts at failing webhooks and leaves other accounts alone", () => {
    const slots = new FailingSlots(2);
    expect(slots.take('a', 'w1')).toBe(true);
    expect(slots.take('a', 'w2')).toBe(true);
    expect(slots.take('a', 'w3')).toBe(false);
    expect(slots.take('b', 'w9')).toBe(true);
    expect(slots.figures()).toEqual({ inFlight: 3, ownersWaiting: 1 });
  });

  it('wakes waiting webhooks in turn, once a slot is free', () => {
    const slots = new FailingSlots(1);
    expect(slots.take('a', 'w1')).toBe(true);
    expect(slots.take('a', 'w2')).toBe(false);
    expect(slots.take('a', 'w3')).toBe(false);
    expect(slots.take('a', 'w2')).toBe(false); // tried again: to the back of the turn
    expect(slots.next('a')).toBeUndefined(); // no slot free
    slots.release('a');
    expect(slots.next('a')).toBe('w3');
    // w3 had nothing left to send: the free slot goes to the next one.
    expect(slots.next('a')).toBe('w2');
    expect(slots.take('a', 'w2')).toBe(true);
    slots.release('a');
    expect(slots.next('a')).toBeUndefined();
    expect(slots.figures()).toEqual({ inFlight: 0, ownersWaiting: 0 });
  });
});
