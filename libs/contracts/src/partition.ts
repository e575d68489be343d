/** 32-bit FNV-1a of a string's UTF-8 bytes. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** The partition that owns a source; the one function every app uses. */
export function partitionOf(sourceId: string, partitions: number): number {
  return fnv1a(sourceId) % partitions;
}
