export const when = (ms: number): string => new Date(ms).toLocaleString();
export const ago = (ms: number): string => {
  const s = Math.round((Date.now() - ms) / 1000);
  if (s < 5) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(ms).toLocaleDateString();
};
export const json = (v: unknown): string => JSON.stringify(v, null, 2) ?? 'undefined';
/** One line for an event (its `$emit` summary, else its data): a tenant sets both, of any length. */
export const oneLine = (v: unknown, max = 120): string => {
  const s = typeof v === 'string' ? v : JSON.stringify(v) ?? '';
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
};
/** A tenant's text (an error message, …) cut at `max` characters. */
export const clip = (s: string, max = 2000): string => (s.length > max ? `${s.slice(0, max - 1)}…` : s);
/** Longest JSON text one value shows (an event, a step's return value, …): the rest stays in the API's answer. */
export const MAX_JSON_CHARS = 64 * 1024;
/** A value as indented JSON, cut at `max` characters, and how many were left out. */
export const clippedJson = (v: unknown, max = MAX_JSON_CHARS): { text: string; omitted: number } => {
  const s = json(v);
  return s.length > max ? { text: s.slice(0, max), omitted: s.length - max } : { text: s, omitted: 0 };
};
/** The endpoint URL of a source with an HTTP interface, from its configured_props. */
export const endpointOf = (props: Record<string, unknown>): string | undefined => {
  for (const v of Object.values(props)) {
    const url = (v as { endpoint_url?: unknown } | null)?.endpoint_url;
    if (typeof url === 'string') return url;
  }
  return undefined;
};
