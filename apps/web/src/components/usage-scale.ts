// The numbers behind the usage charts of the Account page.

/** Compute time for people: `350 ms`, `12.4 s`, `3.5 min`, `1.2 h`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${ms.toLocaleString()} ms`;
  if (ms < 60_000) return `${(ms / 1000).toLocaleString(undefined, { maximumFractionDigits: 1 })} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toLocaleString(undefined, { maximumFractionDigits: 1 })} min`;
  return `${(ms / 3_600_000).toLocaleString(undefined, { maximumFractionDigits: 1 })} h`;
}

/** The smallest 1, 2 or 5 × 10ⁿ at or above `v` (the top of the scale). */
export function niceCeil(v: number): number {
  if (v <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

/**
 * The scale of a chart: to the quota when usage comes near it (a tenth or more), else to the usage,
 * with the quota line drawn at the top edge and said to be above the scale.
 */
export function chartScale(values: number[], quota: number | null): { top: number; quotaOnScale: boolean } {
  const max = Math.max(0, ...values);
  const quotaOnScale = quota !== null && quota > 0 && max * 10 >= quota;
  return { top: niceCeil(quotaOnScale ? Math.max(max, quota) : max), quotaOnScale };
}
