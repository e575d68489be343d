/** Delay before the next attempt: the schedule entry for this attempt with ±20 % jitter, or the endpoint's Retry-After. */
export function nextDelayMs(schedule: number[], attempt: number, retryAfter: string | string[] | undefined, random = Math.random): number | undefined {
  if (attempt > schedule.length) return undefined;
  const fromHeader = parseRetryAfter(retryAfter);
  if (fromHeader !== undefined) return fromHeader;
  const base = schedule[attempt - 1];
  return Math.max(0, Math.round(base * (0.8 + 0.4 * random())));
}

const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** An HTTP date (IMF-fixdate, RFC 850 or asctime) begins with its day name. */
const HTTP_DATE_START = /^\s*(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,?\s/i;

/**
 * `Retry-After` as seconds or an HTTP date, capped at a day; undefined when absent or unreadable. Only a value of
 * those forms goes to `Date.parse`, which reads `-5`, `1.5` or `1, 2` as dates of 2001: such an answer was retried at
 * once instead of on the schedule.
 */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\s*\d+\s*$/.test(v)) return Math.min(Number(v) * 1000, MAX_RETRY_AFTER_MS);
  if (!HTTP_DATE_START.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - now), MAX_RETRY_AFTER_MS);
}
