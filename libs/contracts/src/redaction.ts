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

/** What ends a text cut short. */
const CUT_MARK = '…';

/**
 * `text` as it may be shown: every one of `values` (patterns) in it as `**********`, then cut to `maxChars` (`…`
 * marking the cut) — hidden first, so no value is cut through before it is looked for. A text that came cut already
 * (ending in `…`) may end in the start of a value cut through: that start is hidden too, however short.
 */
export function redactThenCut(text: string, values: readonly string[], maxChars: number): string {
  let out = redactText(text, values);
  if (out.endsWith(CUT_MARK)) out = `${hideValueStart(out.slice(0, -CUT_MARK.length), values)}${CUT_MARK}`;
  return out.length > maxChars ? `${out.slice(0, maxChars)}${CUT_MARK}` : out;
}

/** `text` with its longest tail that is the start of one of `values` as `**********`. */
function hideValueStart(text: string, values: readonly string[]): string {
  let from = text.length;
  for (const v of values) {
    for (let i = Math.max(0, text.length - v.length + 1); i < from; i++) {
      if (v.startsWith(text.slice(i))) {
        from = i;
        break;
      }
    }
  }
  return from < text.length ? `${text.slice(0, from)}${REDACTED}` : text;
}
