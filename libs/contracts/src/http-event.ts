import { TextDecoder } from 'node:util';
import { ApiError, clipped } from './errors';

/** The event an HTTP source's `run` receives. */
export interface HttpEvent {
  method: string;
  path: string;
  query: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
  bodyRaw: string;
  body: unknown;
  url: string;
  client_ip: string;
}

/**
 * Deepest nesting of a JSON body parsed into `event.body`. The event is serialized on its way to the
 * runner and back (`JSON.stringify` recurses: a few thousand levels overflow the stack); the HTTP
 * interface refuses deeper JSON with a 400.
 */
export const HTTP_BODY_MAX_JSON_DEPTH = 1000;

/**
 * The media type of a Content-Type without its parameters, in lower case (`Application/JSON; charset=UTF-8`:
 * `application/json`): RFC 9110 §8.3.1 makes type and subtype case-insensitive, so every check of a body's type reads this.
 */
export function mediaTypeOf(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0].trim().toLowerCase();
}

/** A content type whose body is parsed as JSON (`application/json`, `…+json`). */
export function isJsonContentType(contentType: string): boolean {
  const type = mediaTypeOf(contentType);
  return type === 'application/json' || type.endsWith('+json');
}

/**
 * Whether a string holds a lone UTF-16 surrogate (half of a pair, alone), which Postgres jsonb refuses and text keeps
 * as U+FFFD. Node's native `isWellFormed` (Node 20; not yet in the TypeScript library this project targets).
 */
export function hasLoneSurrogate(text: string): boolean {
  return !(text as string & { isWellFormed(): boolean }).isWellFormed();
}

/** What ends a run of plain characters in a JSON string: a quote, an escape, a NUL. */
const STRING_STOPS = /["\\\u0000]/g;

/**
 * The first limit JSON text breaks, found in one pass without recursion before it is parsed: arrays
 * and objects nested deeper than `maxDepth`, or (with `refuseNul`) a NUL character in a string —
 * raw or as `\u0000` — which Postgres text and jsonb cannot store, or a lone UTF-16 surrogate escape
 * (`\ud800` with no low half after it), which Postgres stores as U+FFFD: what was answered would not
 * be what was kept. Undefined when it breaks none.
 */
export function jsonTextProblem(text: string, maxDepth: number, refuseNul = false): 'depth' | 'nul' | 'surrogate' | undefined {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    if (inString) {
      // Only these stop a string: a native search skips the rest (a 5 MiB component_code is one string).
      STRING_STOPS.lastIndex = i;
      if (!STRING_STOPS.test(text)) return undefined;
      i = STRING_STOPS.lastIndex - 1;
    }
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c /* \ */) {
        if (refuseNul && text.charCodeAt(i + 1) === 0x75 /* u */) {
          const unit = parseInt(text.slice(i + 2, i + 6), 16);
          if (unit === 0) return 'nul';
          if (unit >= 0xdc00 && unit <= 0xdfff) return 'surrogate';
          if (unit >= 0xd800 && unit <= 0xdbff) {
            const low = text.charCodeAt(i + 6) === 0x5c && text.charCodeAt(i + 7) === 0x75 ? parseInt(text.slice(i + 8, i + 12), 16) : NaN;
            if (!(low >= 0xdc00 && low <= 0xdfff)) return 'surrogate';
            i += 6;
          }
          i += 5;
          continue;
        }
        i++;
      } else if (ch === 0x22 /* " */) inString = false;
      else if (refuseNul && ch === 0) return 'nul';
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b /* [ */ || ch === 0x7b /* { */) {
      if (++depth > maxDepth) return 'depth';
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return undefined;
}

/** JSON and form bodies parsed; anything else (or invalid JSON) stays the raw string. */
export function parseHttpBody(contentType: string, raw: string): unknown {
  const type = mediaTypeOf(contentType);
  if (raw === '') return raw;
  if (isJsonContentType(contentType)) {
    try {
      // A byte order mark before JSON text (RFC 8259 lets a reader ignore it) is not part of it; bodyRaw keeps it.
      return JSON.parse(raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw);
    } catch {
      return raw;
    }
  }
  if (type === 'application/x-www-form-urlencoded') return parseFormBody(raw, formDecoderOf(contentType));
  return raw;
}

/**
 * A form body as the query string is parsed: a field given more than once is an array of its values, none lost.
 * With `decoder` (a form in another charset than UTF-8), its escapes (`%E9`) are bytes in that charset.
 */
export function parseFormBody(raw: string, decoder?: BodyDecoder): Record<string, string | string[]> {
  const fields = new Map<string, string | string[]>();
  const entries: Iterable<[string, string]> = decoder ? formEntries(raw, decoder) : new URLSearchParams(raw);
  for (const [k, v] of entries) {
    const prev = fields.get(k);
    fields.set(k, prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v]);
  }
  // fromEntries defines own properties: a field named "__proto__" stays a field.
  return Object.fromEntries(fields);
}

/** A run of percent escapes (`%C3%A9`): the bytes of one piece of text in the form's charset. */
const ESCAPES = /(?:%[0-9a-fA-F]{2})+/g;

/** The fields of a form as URLSearchParams splits them (`&`, `=`, `+` a space), escapes decoded in `decoder`'s charset. */
function* formEntries(raw: string, decoder: BodyDecoder): Generator<[string, string]> {
  const unescape = (s: string): string => s.replace(/\+/g, ' ').replace(ESCAPES, (run) => decoder.decode(Buffer.from(run.replace(/%/g, ''), 'hex')));
  for (const pair of raw.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    yield eq < 0 ? [unescape(pair), ''] : [unescape(pair.slice(0, eq)), unescape(pair.slice(eq + 1))];
  }
}

/** The decoder of a form's escapes: its charset's, UTF-8's for one the ingress would refuse (an event stored before it did). */
function formDecoderOf(contentType: string): BodyDecoder | undefined {
  try {
    return textDecoderOf(contentType);
  } catch {
    return undefined;
  }
}

/** The `charset` parameters of a Content-Type, in lower case and unquoted (`text/plain; charset="UTF-16LE"`: `utf-16le`). */
export function charsetsOf(contentType: string): string[] {
  const semicolon = contentType.indexOf(';');
  if (semicolon < 0 || !/charset/i.test(contentType)) return [];
  const out: string[] = [];
  for (const m of contentType.slice(semicolon).matchAll(/;\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)/g)) {
    if (m[1].toLowerCase() !== 'charset') continue;
    const value = m[2].startsWith('"') ? m[2].slice(1, -1).replace(/\\(.)/g, '$1') : m[2];
    out.push(value.trim().toLowerCase());
  }
  return out;
}

const UTF8_LABELS = new Set(['utf-8', 'utf8', 'unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'x-unicode20utf8']);

/**
 * The decoder of the charset a Content-Type declares, when it is not UTF-8 (undefined: UTF-8, declared or not).
 * Throws 415 `unsupported_media_type` for a charset Node's TextDecoder does not know, or two different ones.
 */
export function textDecoderOf(contentType: string): BodyDecoder | undefined {
  const charsets = [...new Set(charsetsOf(contentType))];
  if (charsets.length === 0) return undefined;
  const shown = charsets.map((c) => (c.length > 100 ? `${c.slice(0, 100)}…` : c));
  if (charsets.length > 1) {
    throw new ApiError(415, 'unsupported_media_type', `the request body's Content-Type gives more than one charset (${shown.join(', ')})`, { header: 'content-type', charsets: shown });
  }
  if (UTF8_LABELS.has(charsets[0])) return undefined;
  let decoder: InstanceType<typeof TextDecoder>;
  try {
    decoder = new TextDecoder(charsets[0]);
  } catch {
    throw new ApiError(
      415,
      'unsupported_media_type',
      `the request body's charset ${shown[0]} is not supported: send it as UTF-8 (or in a charset such as iso-8859-1, windows-1252 or utf-16le)`,
      { header: 'content-type', charset: shown[0] },
    );
  }
  if (decoder.encoding === 'windows-1252') return WINDOWS_1252;
  return decoder.encoding === 'utf-8' ? undefined : decoder;
}

/** Decodes bytes to text (a TextDecoder, or windows-1252's own). */
export interface BodyDecoder {
  decode(bytes: Uint8Array): string;
}

/** What bytes 0x80–0x9F are in windows-1252 (the WHATWG index; five of them stand for themselves). */
const WINDOWS_1252_HIGH = '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178';

/**
 * windows-1252, the charset of every `iso-8859-1`, `latin1`, `us-ascii` and `windows-1252` label: Node 20.18.3 and later
 * decode it as ISO-8859-1 (0x80 as U+0080, not €: nodejs/node#56542), so its 32 bytes apart are mapped here.
 */
const WINDOWS_1252: BodyDecoder = {
  decode: (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1').replace(/[\u0080-\u009f]/g, (c) => WINDOWS_1252_HIGH[c.charCodeAt(0) - 0x80]),
};

/**
 * The text of a request body: its bytes decoded in the charset its Content-Type declares (`iso-8859-1`, `utf-16le`,
 * `windows-1252`…: any label Node's TextDecoder knows), UTF-8 without one. Bytes that do not decode become U+FFFD.
 * Throws 415 `unsupported_media_type` for a charset it does not know (for a body of at least one byte).
 */
export function decodeHttpBody(bytes: Buffer, contentType: string | undefined): string {
  // No bytes, no characters: an empty body is '' whatever its charset (Fastify's route reads none for it).
  if (bytes.length === 0) return '';
  const decoder = contentType ? textDecoderOf(contentType) : undefined;
  return decoder ? decoder.decode(bytes) : bytes.toString('utf8');
}

/**
 * A transfer coding other than chunked (`Transfer-Encoding: gzip, chunked`): Node takes the chunks apart but decodes no
 * other coding, so the body was read as sent. RFC 9112 lets a server refuse a coding it does not implement. Checked
 * on the API's bodies and at the HTTP endpoints of sources alike.
 */
export function assertChunkedOnly(header: string | undefined): void {
  const codings = (header ?? '').split(',').map((c) => c.trim().toLowerCase()).filter(Boolean);
  if (codings.every((c) => c === 'chunked' || c === 'identity')) return;
  throw new ApiError(415, 'unsupported_media_type', `Transfer-Encoding ${clipped(codings.join(', '))} is not accepted: send the request body with no transfer coding but chunked`, { header: 'transfer-encoding' });
}

/**
 * The compact form of an HTTP event for an invocation message that would not
 * fit NATS's payload limit: the body once, as base64 (a bounded 4/3 of its size,
 * where JSON escaping of `bodyRaw` next to the parsed `body` can reach several
 * times it). `unpackHttpEvent` restores the event `run` receives.
 */
export interface PackedHttpEvent extends Omit<HttpEvent, 'bodyRaw' | 'body'> {
  bodyRawBase64: string;
}

export function packHttpEvent(event: HttpEvent): PackedHttpEvent {
  const { bodyRaw, body: _body, ...rest } = event;
  void _body;
  return { ...rest, bodyRawBase64: Buffer.from(bodyRaw, 'utf8').toString('base64') };
}

/** The event `run` receives from a stored HTTP invocation event, packed or not. */
export function unpackHttpEvent(event: unknown): unknown {
  if (!event || typeof event !== 'object' || typeof (event as PackedHttpEvent).bodyRawBase64 !== 'string') return event;
  const { bodyRawBase64, ...rest } = event as PackedHttpEvent;
  const bodyRaw = Buffer.from(bodyRawBase64, 'base64').toString('utf8');
  const contentType = rest.headers?.['content-type'];
  return { ...rest, bodyRaw, body: parseHttpBody(String(Array.isArray(contentType) ? contentType[0] : (contentType ?? '')), bodyRaw) };
}

/**
 * Headers that frame a message or manage its connection (hop-by-hop, RFC 9110 §7.6.1, and the framing ones): the
 * server or client that sends a message sets them. A component setting them in a relayed `respond()` or a
 * `$.send.http` would have its message read otherwise than it is sent.
 */
export const FRAMING_HEADERS: ReadonlySet<string> = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'trailer', 'te', 'proxy-connection']);
