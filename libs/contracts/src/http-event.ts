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

/** A content type whose body is parsed as JSON (`application/json`, `…+json`). */
export function isJsonContentType(contentType: string): boolean {
  const type = contentType.split(';')[0].trim().toLowerCase();
  return type === 'application/json' || type.endsWith('+json');
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
  const type = contentType.split(';')[0].trim().toLowerCase();
  if (raw === '') return raw;
  if (isJsonContentType(contentType)) {
    try {
      return JSON.parse(raw);
    } catch {
      return raw;
    }
  }
  if (type === 'application/x-www-form-urlencoded') return parseFormBody(raw);
  return raw;
}

/** A form body as the query string is parsed: a field given more than once is an array of its values, none lost. */
export function parseFormBody(raw: string): Record<string, string | string[]> {
  const fields = new Map<string, string | string[]>();
  for (const [k, v] of new URLSearchParams(raw)) {
    const prev = fields.get(k);
    fields.set(k, prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v]);
  }
  // fromEntries defines own properties: a field named "__proto__" stays a field.
  return Object.fromEntries(fields);
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
