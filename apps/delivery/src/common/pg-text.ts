/**
 * Postgres text and jsonb cannot hold U+0000 (nor jsonb a lone UTF-16 surrogate), and component code can emit
 * them (in data, keys, a summary or a channel name), a webhook receiver can answer with U+0000. What is stored for reading (summaries, the delivery log) has U+FFFD
 * in its place; the event in the EMITS stream keeps it.
 */
const REPLACEMENT = '\ufffd';

export function pgText(s: string): string;
export function pgText(s: string | null): string | null;
export function pgText(s: string | null): string | null {
  return s !== null && s.includes('\u0000') ? s.replaceAll('\u0000', REPLACEMENT) : s;
}

/**
 * A waiting retry's message as read back: rows written while the column was jsonb hold a message with
 * U+0000 as base64 of its JSON (`{ $json64 }`); others (json since Migration20261127000000) the message itself.
 */
export function fromExactJson<T>(stored: unknown): T {
  const wrapped = stored as { $json64?: unknown } | null;
  return (wrapped && typeof wrapped === 'object' && typeof wrapped.$json64 === 'string' ? JSON.parse(Buffer.from(wrapped.$json64, 'base64').toString('utf8')) : stored) as T;
}

/**
 * JSON text for a json or jsonb column: every escaped U+0000 and every escaped surrogate (`\u0000`, `\ud800`…`\udfff`
 * after an odd number of backslashes) becomes U+FFFD. JSON.stringify escapes a surrogate only when it is alone (a pair
 * is written as it is), and jsonb refuses a lone one: one such event failed its whole batch again and again, holding
 * every account's events. A json column takes both, but its `->>` then fails on the whole row (`\u0000 cannot be
 * converted to text`), as a workflow's runs are read from its `$logs`.
 */
export function pgJson(value: unknown): string {
  const json = JSON.stringify(value);
  return /u(0000|d[89a-f])/i.test(json) ? json.replace(/(\\+)u(?:0000|d[89a-f][0-9a-f]{2})/gi, (m, bs: string) => (bs.length % 2 ? `${bs.slice(0, -1)}\\ufffd` : m)) : json;
}
