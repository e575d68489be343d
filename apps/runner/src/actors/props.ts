import { type PropDescriptor, readTimerSchedule, type TimerSchedule } from '@app/component-model';
import { decryptValue, isEncrypted } from '@app/contracts';

/** Decrypts every `{ $enc }` value (secret props, app `$auth`) anywhere in the configured props. */
export function decryptDeep(key: Buffer, value: unknown): unknown {
  if (isEncrypted(value)) return decryptValue(key, value);
  if (Array.isArray(value)) return value.map((v) => decryptDeep(key, v));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = decryptDeep(key, v);
    return out;
  }
  return value;
}

/** The prop values a run sees: configured values (secrets decrypted), else each prop's default. */
export function resolveProps(key: Buffer, configured: Record<string, unknown>, props: PropDescriptor[]): Record<string, unknown> {
  return withDefaults(decryptDeep(key, configured) as Record<string, unknown>, props);
}

/**
 * Values already decrypted (a workflow step's, its templates filled in after its own values were decrypted), each
 * prop's default where none is given. Nothing is decrypted: what a template inserted — an event, a step's return
 * value — is data, and an object of it that looks encrypted (`{ $enc }`) is handed on as it is.
 */
export function withDefaults(values: Record<string, unknown>, props: PropDescriptor[]): Record<string, unknown> {
  const out = { ...values };
  for (const p of props) {
    if (out[p.name] === undefined && p.default !== undefined) out[p.name] = structuredClone(p.default);
  }
  return out;
}

export type TimerSpec = TimerSchedule;

/**
 * The schedule of a source's first `$.interface.timer` prop: its configured value
 * (`{ intervalSeconds }`, `{ cron, timezone }` or the API's `{ cron, interval_seconds }` form),
 * else the prop's default; without one, the value of the timer `additionalProps()` added
 * (`added`: its name; the API stored its default as the value). Undefined when the source has no usable timer.
 */
export function timerSpecOf(configured: Record<string, unknown>, props: PropDescriptor[], added?: string): TimerSpec | undefined {
  const prop = props.find((p) => p.type === '$.interface.timer');
  if (!prop) return added ? readTimerSchedule(configured[added]) : undefined;
  return readTimerSchedule(configured[prop.name]) ?? readTimerSchedule(prop.default);
}
