import { nextDelayMs, parseRetryAfter } from './retry-policy';

describe('webhook retry policy', () => {
  const schedule = [5_000, 300_000, 1_800_000];

  it('follows the schedule with at most ±20 % jitter and stops after it', () => {
    expect(nextDelayMs(schedule, 1, undefined, () => 0)).toBe(4_000);
    expect(nextDelayMs(schedule, 1, undefined, () => 1)).toBe(6_000);
    expect(nextDelayMs(schedule, 2, undefined, () => 0.5)).toBe(300_000);
    expect(nextDelayMs(schedule, 3, undefined, () => 0.5)).toBe(1_800_000);
    expect(nextDelayMs(schedule, 4, undefined)).toBeUndefined();
  });

  it('honours Retry-After in seconds or as a date, capped at a day', () => {
    expect(nextDelayMs(schedule, 1, '7')).toBe(7_000);
    expect(parseRetryAfter(new Date(Date.UTC(2030, 0, 1, 0, 0, 30)).toUTCString(), Date.UTC(2030, 0, 1))).toBe(30_000);
    expect(parseRetryAfter('999999')).toBe(86_400_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    for (const v of ['-5', '1.5', '1, 2', '2030-01-01']) expect([v, parseRetryAfter(v)]).toEqual([v, undefined]);
    const at = Date.UTC(2030, 0, 1);
    for (const v of ['Tue, 01 Jan 2030 00:00:30 GMT', 'Tuesday, 01-Jan-30 00:00:30 GMT']) expect([v, parseRetryAfter(v, at)]).toEqual([v, 30_000]);
    expect(nextDelayMs(schedule, 4, '7')).toBeUndefined();
  });
});
