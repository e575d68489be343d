'use strict';
// The bits of HTTP/1.1 the bench client and receiver read themselves (bench/support/http-client.js, receiver.js).

const HEAD_END = Buffer.from('\r\n\r\n');

/** The value of header `name` (lower case) in a lower-cased head, or undefined. */
function header(head, name) {
  const at = head.indexOf(`\r\n${name}:`);
  if (at < 0) return undefined;
  const from = at + name.length + 3;
  const to = head.indexOf('\r\n', from);
  return head.slice(from, to < 0 ? undefined : to).trim();
}

/**
 * A chunked body in `buf` from `start`: its bytes and where the message ends, `{ bad: true }` for a chunk size that is
 * not hex, or undefined while it is not all there.
 */
function chunked(buf, start) {
  const parts = [];
  let at = start;
  for (;;) {
    const lineEnd = buf.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(buf.toString('latin1', at, lineEnd), 16);
    if (Number.isNaN(size)) return { bad: true };
    if (size === 0) {
      const end = buf.indexOf(HEAD_END, lineEnd - 2);
      return end < 0 ? undefined : { body: Buffer.concat(parts), end: end + 4 };
    }
    if (lineEnd + 2 + size + 2 > buf.length) return undefined;
    parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

module.exports = { HEAD_END, header, chunked };
