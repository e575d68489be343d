/**
 * What an answer shows in place of a value it keeps hidden: a secret prop's value, an app's `$auth`, the credentials
 * of a URL (user info, query values). Sent back for a secret prop, it keeps the stored value.
 */
export const SECRET_MASK = '********';

/** What a hidden value is replaced by in a text that quoted it (a run's record, an error of component code). */
export const REDACTED = '**********';

/** Shorter values are not looked for: they would hide ordinary words and numbers of the record. */
export const REDACT_MIN_CHARS = 4;

/** Every string inside a value (deeply). */
export function stringsOf(v: unknown, out: string[]): void {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) stringsOf(x, out);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) stringsOf(x, out);
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

/** A copy of `value` with every one of `values` (patterns) in its strings (and keys) replaced by `**********`. */
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
