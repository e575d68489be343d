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
/** One line for an event when it has no `$emit` summary. */
export const oneLine = (v: unknown, max = 120): string => {
  const s = typeof v === 'string' ? v : JSON.stringify(v) ?? '';
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
};
/** The endpoint URL of a source with an HTTP interface, from its configured_props. */
export const endpointOf = (props: Record<string, unknown>): string | undefined => {
  for (const v of Object.values(props)) {
    const url = (v as { endpoint_url?: unknown } | null)?.endpoint_url;
    if (typeof url === 'string') return url;
  }
  return undefined;
};
