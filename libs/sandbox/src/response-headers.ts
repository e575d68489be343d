/**
 * Bounds of the headers a `respond()` answer may set. HTTP clients refuse a response head over their limit (Node's
 * and undici's default is 16 KiB in all): 20,000 headers, or one 900 KB value, were relayed and the caller could not
 * read the answer. The api adds its own headers (Content-Security-Policy, Date, the endpoint's cookie Path…), so a
 * component's headers get half of that: at most 100 header lines and 8 KiB.
 */
export const RESPONSE_MAX_HEADERS = 100;
export const RESPONSE_MAX_HEADER_BYTES = 8 * 1024;

/**
 * Why `headers` are over the bounds (a sentence for the run's error), or undefined when within them. Each line is
 * counted as written on the wire, `name: value` and its line end; each value of a list is a line.
 */
export function responseHeadersProblem(headers: Record<string, string | string[]>): string | undefined {
  let lines = 0;
  let bytes = 0;
  for (const [name, value] of Object.entries(headers)) {
    for (const one of Array.isArray(value) ? value : [value]) {
      lines += 1;
      bytes += name.length + 2 + String(one).length + 2;
    }
  }
  if (lines > RESPONSE_MAX_HEADERS) return `too many headers: ${lines}, at most ${RESPONSE_MAX_HEADERS} (each value of a list counts as one)`;
  if (bytes > RESPONSE_MAX_HEADER_BYTES) return `headers too large: ${bytes} bytes, at most ${RESPONSE_MAX_HEADER_BYTES} (each counted as "name: value" and its line end)`;
  return undefined;
}
