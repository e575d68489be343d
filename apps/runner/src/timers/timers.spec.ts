import { TimerHeap } from './timer-heap';
import { planTimer, slotAfter, timerEvent } from './timer-slots';

describe('timer slots', () => {
  const state = { anchorMs: 10_000, specKey: 'every:60' };
  const every = { intervalSeconds: 60 };

  it('counts interval slots from the anchor', () => {
    expect(slotAfter(every, state, 10_000)).toBe(70_000);
    expect(slotAfter(every, state, 69_999)).toBe(70_000);
    expect(slotAfter(every, state, 70_000)).toBe(130_000);
  });

  it('plans the next slot without catch-up when nothing was missed', () => {
    expect(planTimer(every, { ...state, lastSlotMs: 70_000 }, 100_000)).toEqual({ nextMs: 130_000 });
  });

  it('fires at most one catch-up (the latest missed slot) after a failover', () => {
    expect(planTimer(every, { ...state, lastSlotMs: 70_000 }, 400_000)).toEqual({ catchUpMs: 370_000, nextMs: 430_000 });
  });

  it("fires the latest missed cron slot as the catch-up, however long the source was away", () => {
    // A month of minutes: the catch-up was looked for slot by slot, 10,000 at most (each a timezone conversion), so a
    // runner starting many such sources held its thread for seconds, and fired a slot days old.
    const spec = { cron: '* * * * *', timezone: 'Europe/Paris' };
    const away = (now: number) => ({ anchorMs: 0, specKey: 'x', lastSlotMs: now - 30 * 86_400_000 });
    const now = Date.parse('2026-12-01T10:00:30Z');
    expect(planTimer(spec, away(now), now)).toEqual({ catchUpMs: Date.parse('2026-12-01T10:00:00Z'), nextMs: Date.parse('2026-12-01T10:01:00Z') });
    const onSlot = Date.parse('2026-12-01T10:00:00Z');
    expect(planTimer(spec, away(onSlot), onSlot)).toEqual({ catchUpMs: onSlot, nextMs: Date.parse('2026-12-01T10:01:00Z') });
  });

  it('supports cron with a timezone', () => {
    const spec = { cron: '0 9 * * *', timezone: 'Europe/Paris' };
    const next = slotAfter(spec, { anchorMs: 0, specKey: 'x' }, Date.parse('2024-06-01T08:00:00Z'));
    expect(new Date(next).toISOString()).toBe('2024-06-02T07:00:00.000Z');
    expect(timerEvent(spec, next)).toEqual({ timestamp: next / 1000, cron: '0 9 * * *', timezone: 'Europe/Paris' });
    expect(timerEvent(every, 70_500)).toEqual({ timestamp: 70, interval_seconds: 60 });
  });
});

describe('TimerHeap', () => {
  it('fires due keys in time order with one Node timer, and honours cancel and reschedule', async () => {
    const fired: string[] = [];
    const heap = new TimerHeap((key) => fired.push(key));
    const now = Date.now();
    for (let i = 0; i < 1000; i++) heap.schedule(`k${i}`, now + 1000 + i);
    heap.schedule('first', now + 5);
    heap.schedule('second', now + 10);
    heap.schedule('gone', now + 1);
    heap.cancel('gone');
    heap.schedule('moved', now + 1);
    heap.schedule('moved', now + 20);
    await new Promise((r) => setTimeout(r, 60));
    expect(fired).toEqual(['first', 'second', 'moved']);
    expect(heap.size).toBe(1000);
    heap.stop();
  });
});
