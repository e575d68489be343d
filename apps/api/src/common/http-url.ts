import { BadRequestError, clipped, longerThan } from '@app/contracts';
import { shownAsWritten } from '@app/net';

/**
 * `scheme://authority` as written: WHATWG's parser repairs `http:///x`, `http:/x`, `http:x` and
 * `http:\\x` into `http://x/`, so a URL it accepts may still have been sent without a hostname.
 */
const WRITTEN_AUTHORITY = /^[a-z][a-z0-9+.-]*:\/\/[^/\\?#\s]/i;
const MAX_URL_CHARS = 2048;

/** A refused URL as its 400 echoes it (`details.value`): as written, its credentials as `********`, clipped. */
const echoed = (text: string): string => clipped(shownAsWritten(text));

/**
 * An absolute http(s) URL with a hostname written after the scheme, from a client's field; anything
 * else is a 400 naming the field and the rule. `example` shows the expected form in the messages; `details.value`
 * echoes the URL as written, its credentials as `********`.
 */
export function parseHttpUrl(value: unknown, field: string, example: string): URL {
  if (typeof value !== 'string') throw new BadRequestError(`${field} is required`, { field });
  // Given but blank, it is a URL that is not one (a required one given empty is refused as missing before this).
  if (value.trim() === '') throw new BadRequestError(`${field} must be an absolute http or https URL with a hostname, e.g. ${example}`, { field, value: echoed(value) });
  if (longerThan(value, MAX_URL_CHARS)) throw new BadRequestError(`${field} must be at most ${MAX_URL_CHARS} characters`, { field });
  const text = value.trim();
  // The parser drops tabs and line breaks silently: what is stored and shown would not be the URL called.
  if (/[\u0000-\u001f\u007f]/.test(text)) throw new BadRequestError(`${field} must not contain control characters (tabs, line breaks)`, { field, value: echoed(text) });
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw new BadRequestError(`${field} must be an absolute http or https URL with a hostname, e.g. ${example}`, { field, value: echoed(text) });
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new BadRequestError(`${field} must use http or https, not ${parsed.protocol.replace(/:$/, '')}`, { field, value: echoed(text) });
  }
  if (!parsed.hostname || !WRITTEN_AUTHORITY.test(text)) throw new BadRequestError(`${field} must include a hostname after the scheme, e.g. ${example}`, { field, value: echoed(text) });
  // The parser takes `:0` (and `:00`) as a port, but no connection can be made to it: every call would fail.
  if (parsed.port === '0') throw new BadRequestError(`${field} must not use port 0: no server listens there`, { field, value: echoed(text) });
  return parsed;
}
