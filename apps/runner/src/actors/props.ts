import { type PropDescriptor, readTimerSchedule, type TimerSchedule } from '@app/component-model';
import { decryptValue, type EncryptedValue, isEncrypted } from '@app/contracts';

/**
 * The value the platform sealed in one prop's stored value, at the only places it seals one: the value itself (a
 * `secret: true` prop's) or its `$auth` (an app's); `wrap` puts the plain value back in place.
 */
export function sealedIn(v: unknown): { sealed: EncryptedValue; wrap: (plain: unknown) => unknown } | undefined {
  if (isEncrypted(v)) return { sealed: v, wrap: (plain) => plain };
  const auth = v && typeof v === 'object' && !Array.isArray(v) ? (v as { $auth?: unknown }).$auth : undefined;
  return isEncrypted(auth) ? { sealed: auth, wrap: (plain) => ({ ...(v as object), $auth: plain }) } : undefined;
}

/**
 * Configured props with the values the platform sealed decrypted (`sealedIn`). A value of that form anywhere else
 * (inside a plain prop's object or array, stored before such values were refused) is data: handed on as stored.
 */
export function decryptSealed(key: Buffer, configured: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(configured).map(([name, v]) => {
      const at = sealedIn(v);
      return [name, at ? at.wrap(decryptValue(key, at.sealed)) : v];
    }),
  );
}

/** The prop values a run sees: configured values (secrets decrypted), else each prop's default. */
export function resolveProps(key: Buffer, configured: Record<string, unknown>, props: PropDescriptor[]): Record<string, unknown> {
  return withDefaults(decryptSealed(key, configured), props);
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
