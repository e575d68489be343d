/** A timer's schedule: an interval, or a 5-field cron with an optional IANA timezone. */
export type TimerSchedule = { intervalSeconds: number } | { cron: string; timezone?: string };

/**
 * Reads a `$.interface.timer` value: `{ intervalSeconds }`, `{ cron, timezone }`, or
 * the API's `{ cron, interval_seconds }` view. Undefined when it holds no usable schedule.
 */
export function readTimerSchedule(value: unknown): TimerSchedule | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const v = value as Record<string, unknown>;
  const cron = typeof v.cron === 'string' && v.cron.trim() ? v.cron.trim() : undefined;
  const timezone = typeof v.timezone === 'string' && v.timezone ? v.timezone : undefined;
  if (cron) return timezone ? { cron, timezone } : { cron };
  const interval = Number(v.intervalSeconds ?? v.interval_seconds);
  if (Number.isFinite(interval) && interval > 0) return { intervalSeconds: interval };
  return undefined;
}

/**
 * The event a timer passes to `run` for the slot (or manual run) at `atMs`:
 * `{ timestamp: <epoch s>, interval_seconds }` or `{ timestamp, cron }` (+ `timezone` when set).
 */
export function timerEvent(spec: TimerSchedule, atMs: number): Record<string, unknown> {
  const timestamp = Math.floor(atMs / 1000);
  return 'cron' in spec ? { timestamp, cron: spec.cron, ...(spec.timezone ? { timezone: spec.timezone } : {}) } : { timestamp, interval_seconds: spec.intervalSeconds };
}
