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

/** JSON and form bodies parsed; anything else (or invalid JSON) stays the raw string. */
export function parseHttpBody(contentType: string, raw: string): unknown {
  const type = contentType.split(';')[0].trim().toLowerCase();
  if (raw === '') return raw;
  if (type === 'application/json' || type.endsWith('+json')) {
    try {
      return JSON.parse(raw);
    } catch {
      return raw;
    }
  }
  if (type === 'application/x-www-form-urlencoded') return Object.fromEntries(new URLSearchParams(raw));
  return raw;
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
