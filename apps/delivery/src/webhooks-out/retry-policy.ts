/** Delay before the next attempt: the schedule entry for this attempt with ±20 % jitter, or the endpoint's Retry-After. */
export function nextDelayMs(schedule: number[], attempt: number, retryAfter: string | string[] | undefined, random = Math.random): number | undefined {
  if (attempt > schedule.length) return undefined;
  const fromHeader = parseRetryAfter(retryAfter);
  if (fromHeader !== undefined) return fromHeader;
  const base = schedule[attempt - 1];
  return Math.max(0, Math.round(base * (0.8 + 0.4 * random())));
}

const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** `Retry-After` as seconds or an HTTP date, capped at a day; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\s*\d+\s*$/.test(v)) return Math.min(Number(v) * 1000, MAX_RETRY_AFTER_MS);
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - now), MAX_RETRY_AFTER_MS);
}
