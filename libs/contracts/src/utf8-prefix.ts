/** The first `maxBytes` bytes of `text` in UTF-8, ending before a character that would not fit whole (a preview's cut). */
export function utf8Prefix(text: string, maxBytes: number): string {
  // At most maxBytes UTF-16 units make at least maxBytes bytes; a surrogate half cut off at their end is 3 bytes that go.
  const bytes = Buffer.from(text.slice(0, maxBytes));
  if (bytes.length <= maxBytes) return text.slice(0, maxBytes);
  let end = maxBytes;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
