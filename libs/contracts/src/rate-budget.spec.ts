import { RateBudget } from './rate-budget';

describe('RateBudget', () => {
  let clock = 0;
  beforeEach(() => (clock = 0));
  const budget = () => new RateBudget(100, 1000, () => clock);

  it('lets an account publish its burst at once, then at its rate', () => {
    const b = budget();
    expect(b.take('u_a', 1000)).toBe(0);
    expect(b.take('u_a', 50)).toBe(500);
    clock = 1000; // 100 refilled, 50 of them owed
    expect(b.take('u_a', 50)).toBe(0);
    expect(b.take('u_a', 10)).toBe(100);
  });

  it('keeps each account to its own bucket', () => {
    const b = budget();
    expect(b.take('u_a', 1500)).toBe(5000);
    expect(b.take('u_b', 1000)).toBe(0);
  });

  it('makes later publishes of an account wait behind what it owes', () => {
    const b = budget();
    b.take('u_a', 1000);
    expect(b.take('u_a', 100)).toBe(1000);
    expect(b.take('u_a', 100)).toBe(2000);
  });

  it('does not refill past the burst', () => {
    const b = budget();
    clock = 60_000;
    expect(b.take('u_a', 1000)).toBe(0);
    expect(b.take('u_a', 1)).toBe(10);
  });

  it('never owes for a clock that went back', () => {
    const b = budget();
    clock = 600_000;
    b.take('u_a', 10);
    clock = 0;
    expect(b.take('u_a', 10)).toBe(0);
  });

  it('tells how long an account owes, without taking anything', () => {
    const b = budget();
    expect(b.owedMs('u_a')).toBe(0);
    b.take('u_a', 1200);
    expect([b.owedMs('u_a'), b.owedMs('u_a'), b.owedMs('u_b')]).toEqual([2000, 2000, 0]);
    clock = 1500;
    expect(b.owedMs('u_a')).toBe(500);
    clock = 2000;
    expect(b.owedMs('u_a')).toBe(0);
  });

  it('tells how long until an account has n left, without taking anything', () => {
    const b = budget();
    expect(b.waitMs('u_a', 1000)).toBe(0);
    b.take('u_a', 1000);
    expect([b.waitMs('u_a', 1), b.waitMs('u_a', 1), b.waitMs('u_b', 1)]).toEqual([10, 10, 0]);
    clock = 10;
    expect(b.waitMs('u_a', 1)).toBe(0);
  });

  it('is off at 0', () => {
    expect(new RateBudget(0, 0).take('u_a', 1e9)).toBe(0);
  });
});
