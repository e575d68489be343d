import { DEFER_MAX_MS, DEFER_MIN_MS, PartitionAdmission } from './partition-admission';

describe('PartitionAdmission', () => {
  let clock = 0;
  const admission = (max: number) => new PartitionAdmission(max, 10_000, () => clock);
  beforeEach(() => (clock = 0));

  it('holds everything while more than a quarter of the room is free', () => {
    const a = admission(8);
    for (let seq = 1; seq <= 6; seq++) expect(a.offer('dc_a', 'u_a', seq)).toEqual({ hold: true, deferrals: 0 });
    expect(a.held).toBe(6);
  });

  it("keeps the last quarter for the other accounts: an account holding a quarter takes no more, another's invocation is held", () => {
    const a = admission(8);
    for (let seq = 1; seq <= 6; seq++) a.offer('dc_slow', 'u_a', seq);
    expect(a.offer('dc_slow', 'u_a', 7)).toEqual({ hold: false, delayMs: DEFER_MIN_MS });
    expect(a.offer('dc_other', 'u_a', 8)).toEqual({ hold: false, delayMs: DEFER_MIN_MS });
    expect(a.offer('dc_b', 'u_b', 9)).toEqual({ hold: true, deferrals: 0 });
    expect(a.offer('dc_b', 'u_b', 10)).toEqual({ hold: true, deferrals: 0 });
    // The room is full now, for everyone.
    expect(a.offer('dc_c', 'u_c', 11).hold).toBe(false);
    a.release('dc_b', 'u_b');
    expect(a.offer('dc_c', 'u_c', 11)).toEqual({ hold: true, deferrals: 1 });
  });

  it("keeps a quarter for the account's other sources too", () => {
    const a = admission(8);
    for (let seq = 1; seq <= 6; seq++) a.offer('dc_slow', 'u_a', seq);
    expect(a.offer('dc_slow', 'u_a', 7).hold).toBe(false);
    // u_a holds six, more than its quarter: its other source waits too, but only while the room is short.
    a.release('dc_slow', 'u_a');
    a.release('dc_slow', 'u_a');
    expect(a.offer('dc_other', 'u_a', 8).hold).toBe(true);
  });

  it("holds a source's invocations in stream order: none after one handed back, the earliest first when they return", () => {
    const a = admission(8);
    for (let seq = 1; seq <= 6; seq++) a.offer('dc_a', 'u_a', seq);
    expect(a.offer('dc_a', 'u_a', 7).hold).toBe(false);
    expect(a.offer('dc_a', 'u_a', 8).hold).toBe(false);
    for (let i = 0; i < 6; i++) a.release('dc_a', 'u_a');
    // 8 comes back first: 7 is still out, due back in 200 ms; 8 comes back just after it.
    clock = 50;
    expect(a.offer('dc_a', 'u_a', 8)).toEqual({ hold: false, delayMs: DEFER_MIN_MS - 50 + 20 });
    // So does a new one; waiting for an earlier one does not lengthen the wait.
    expect(a.offer('dc_a', 'u_a', 9)).toEqual({ hold: false, delayMs: DEFER_MIN_MS - 50 + 20 });
    clock = 150;
    expect(a.offer('dc_a', 'u_a', 9)).toEqual({ hold: false, delayMs: DEFER_MIN_MS - 150 + 20 });
    expect(a.offer('dc_a', 'u_a', 7)).toEqual({ hold: true, deferrals: 1 });
    expect(a.offer('dc_a', 'u_a', 8)).toEqual({ hold: true, deferrals: 2 });
    expect(a.offer('dc_a', 'u_a', 9)).toEqual({ hold: true, deferrals: 2 });
  });

  it('holds an earlier invocation coming back (a redelivery) before those handed back', () => {
    const a = admission(8);
    for (let seq = 10; seq <= 15; seq++) a.offer('dc_a', 'u_a', seq);
    expect(a.offer('dc_a', 'u_a', 16).hold).toBe(false);
    a.release('dc_a', 'u_a');
    a.release('dc_a', 'u_a');
    // 11 failed and was handed back by its actor: it comes back before 16, and is held first.
    expect(a.offer('dc_a', 'u_a', 11).hold).toBe(true);
    expect(a.offer('dc_a', 'u_a', 16)).toEqual({ hold: true, deferrals: 1 });
  });

  it('hands back for longer each time, up to DEFER_MAX_MS', () => {
    const a = admission(1);
    a.offer('dc_a', 'u_a', 1);
    const delays = Array.from({ length: 8 }, () => a.offer('dc_b', 'u_b', 2)).map((x) => (x.hold ? 0 : x.delayMs));
    expect(delays).toEqual([200, 400, 800, 1600, 2000, 2000, 2000, 2000].map((ms) => Math.min(ms, DEFER_MAX_MS)));
  });

  it('forgets a handed-back invocation that does not come back, so the later ones of its source are not held back for ever', () => {
    const a = admission(4);
    for (let seq = 1; seq <= 4; seq++) a.offer('dc_a', 'u_a', seq);
    expect(a.offer('dc_a', 'u_a', 5).hold).toBe(false);
    for (let i = 0; i < 4; i++) a.release('dc_a', 'u_a');
    clock = 5_000;
    expect(a.offer('dc_a', 'u_a', 6).hold).toBe(false);
    clock = 10_001; // 5 was not seen again (purged with its source's subject, say)
    expect(a.offer('dc_a', 'u_a', 6)).toEqual({ hold: true, deferrals: 1 });
  });

  it('never hands back for longer than DEFER_MAX_MS behind an earlier one, whatever the clock did', () => {
    const a = admission(4);
    for (let seq = 1; seq <= 3; seq++) a.offer('dc_a', 'u_a', seq);
    clock = 600_000;
    expect(a.offer('dc_a', 'u_a', 4).hold).toBe(false);
    clock = 0; // set back
    expect(a.offer('dc_a', 'u_a', 5)).toEqual({ hold: false, delayMs: DEFER_MAX_MS + 20 });
  });

  it('forgets what a gone source handed back', () => {
    const a = admission(2);
    a.offer('dc_a', 'u_a', 1);
    a.offer('dc_a', 'u_a', 2);
    expect(a.offer('dc_a', 'u_a', 3).hold).toBe(false);
    a.forget('dc_a');
    a.release('dc_a', 'u_a');
    expect(a.offer('dc_a', 'u_a', 4).hold).toBe(true);
  });
});
