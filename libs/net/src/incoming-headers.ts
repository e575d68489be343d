import { IncomingHttpHeaders } from 'node:http';

/** Headers whose repeats node:http drops: the first one counts. */
const FIRST_ONLY = new Set([
  'age', 'authorization', 'content-length', 'content-type', 'etag', 'expires', 'from', 'host', 'if-modified-since',
  'if-unmodified-since', 'last-modified', 'location', 'max-forwards', 'proxy-authorization', 'referer', 'retry-after', 'server', 'user-agent',
]);

/**
 * Raw response header lines (name, value, name, value…) read as node:http reads them into
 * `IncomingMessage.headers`: lower-case names, latin1 values, `set-cookie` always an array,
 * repeats of the single-valued headers above dropped, other repeats joined (`cookie` with "; ", the rest with ", ").
 */
export function incomingHeaders(raw: Buffer[]): IncomingHttpHeaders {
  const headers: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i].toString('latin1').toLowerCase();
    const value = raw[i + 1].toString('latin1');
    const seen = headers[name];
    if (name === 'set-cookie') headers[name] = seen === undefined ? [value] : [...(seen as string[]), value];
    else if (seen === undefined) headers[name] = value;
    else if (!FIRST_ONLY.has(name)) headers[name] = `${seen as string}${name === 'cookie' ? '; ' : ', '}${value}`;
  }
  return headers;
}
