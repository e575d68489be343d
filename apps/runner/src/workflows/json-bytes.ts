/** The JSON bytes of `v`, counted only up to `limit` (a value read many times over is not walked past it). */
export function jsonBytesUpTo(v: unknown, limit: number): number {
  let total = 0;
  const walk = (x: unknown): void => {
    if (total > limit) return;
    if (typeof x === 'string') total += Buffer.byteLength(x) + 2;
    else if (Array.isArray(x)) {
      total += 2;
      for (const item of x) walk(item);
    } else if (x && typeof x === 'object') {
      total += 2;
      for (const [k, item] of Object.entries(x)) {
        total += Buffer.byteLength(k) + 4;
        walk(item);
      }
    } else total += String(x).length + 1;
  };
  walk(v);
  return total;
}
