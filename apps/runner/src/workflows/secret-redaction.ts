import { decryptValue, isEncrypted } from '@app/contracts';

export const REDACTED = '**********';

/** Shorter values are not looked for: they would hide ordinary words and numbers of the record. */
export const REDACT_MIN_CHARS = 4;

/** Every string inside a value (deeply). */
function stringsOf(v: unknown, out: string[]): void {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) stringsOf(x, out);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) stringsOf(x, out);
}

/** The decrypted strings of a step's encrypted props (secret props, app `$auth`). */
function encryptedStrings(key: Buffer, v: unknown, out: string[]): void {
  if (isEncrypted(v)) {
    try {
      stringsOf(decryptValue(key, v), out);
    } catch {
      // Not decryptable: the step fails on it, and there is nothing to hide.
    }
  } else if (Array.isArray(v)) for (const x of v) encryptedStrings(key, x, out);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) encryptedStrings(key, x, out);
}

/**
 * Values a workflow may have to hide: its records are searched for each of them, so a workflow holding more does
 * not run (a few hundred values in a run's megabytes of output would hold the runner's thread for seconds).
 */
export const REDACT_MAX_VALUES = 64;

/** The values a run's record must not show: the workflow's secrets and every step's secret props and `$auth`. */
export function secretValues(key: Buffer, secrets: Record<string, string>, stepProps: Record<string, unknown>[]): string[] {
  const found: string[] = [];
  stringsOf(Object.values(secrets), found);
  for (const props of stepProps) encryptedStrings(key, props, found);
  return [...new Set(found.filter((s) => s.length >= REDACT_MIN_CHARS))];
}

/** What is searched for: each value as written and as it appears inside JSON text (escaped), longest first (a secret holding another is hidden whole). */
export function redactionPatterns(values: readonly string[]): string[] {
  return [...new Set(values.flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]))].sort((a, b) => b.length - a.length);
}

function redactText(s: string, values: readonly string[]): string {
  let out = s;
  for (const v of values) if (out.includes(v)) out = out.split(v).join(REDACTED);
  return out;
}

/** A copy of `value` with every secret value in its strings (and keys) replaced by `**********`. */
export function redact<T>(value: T, values: readonly string[]): T {
  if (!values.length) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return redactText(v, values);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [redactText(k, values), walk(x)]));
    return v;
  };
  return walk(value) as T;
}
