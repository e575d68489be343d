/**
 * How far a message read from a sandbox may unfold. `v8.serialize` writes an object that is referenced twice
 * once, so a frame of a few hundred bytes can hold an array of 2^40 leaves (each level holding the same child
 * twice): cheap to deserialize, but `JSON.stringify` or a logger walks every leaf, synchronously, and the app's
 * event loop never comes back. Likewise a sparse array: one element, a length of a billion. In a message without
 * shared references every value, every character of a string or key and every array slot takes at least a byte of
 * the frame, so a message that unfolds to more than twice its frame (with room for small ones) was made to grow.
 */
export function unfoldingBudget(frameBytes: number): number {
  return 2 * frameBytes + 1024;
}

/** Whether `value` unfolds (values, characters, array slots and bytes of binary data) within `budget`; stops as soon as it does not. */
export function unfoldsWithin(value: unknown, budget: number): boolean {
  let left = budget;
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    left -= 1;
    if (typeof v === 'string') left -= v.length;
    else if (typeof v === 'object' && v !== null) {
      if (ArrayBuffer.isView(v)) left -= v.byteLength;
      else if (v instanceof ArrayBuffer || v instanceof SharedArrayBuffer) left -= v.byteLength;
      else if (Array.isArray(v)) {
        left -= v.length;
        if (left < 0) return false;
        for (let i = 0; i < v.length; i++) stack.push(v[i]);
      } else if (v instanceof Map) {
        for (const [k, x] of v) stack.push(k, x);
      } else if (v instanceof Set) {
        for (const x of v) stack.push(x);
      } else {
        for (const k of Object.keys(v)) {
          left -= k.length;
          stack.push((v as Record<string, unknown>)[k]);
        }
      }
    }
    if (left < 0) return false;
  }
  return true;
}
