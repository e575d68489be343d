/**
 * Typed domain errors. The api's one exception filter turns them into
 * `{ error, code, details? }` with their status.
 */
/** Most characters of a value the client sent that an error quotes (a name, an id, a key). */
export const QUOTED_MAX_CHARS = 100;

/** A client's value as an error quotes it: at most QUOTED_MAX_CHARS characters, `…` marking the cut. */
export function clipped(text: string): string {
  return text.length > QUOTED_MAX_CHARS ? `${text.slice(0, QUOTED_MAX_CHARS)}…` : text;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export class BadRequestError extends ApiError {
  constructor(message: string, details?: Record<string, unknown>, code = 'invalid_request') {
    super(400, code, message, details);
  }
}

/**
 * 401 with the `WWW-Authenticate: Bearer` challenge HTTP requires of it (RFC 9110 §15.5.2; RFC 6750 §3):
 * `error="invalid_token"` for a key given but not valid, `invalid_request` for a malformed header.
 */
export class UnauthorizedError extends ApiError {
  constructor(message = 'missing or invalid API key: send Authorization: Bearer <API_KEY>', error?: 'invalid_token' | 'invalid_request') {
    super(401, 'unauthorized', message, undefined, { 'www-authenticate': `Bearer realm="api"${error ? `, error="${error}"` : ''}` });
  }
}

export class NotFoundError extends ApiError {
  constructor(message = 'not found', details?: Record<string, unknown>) {
    super(404, 'not_found', message, details);
  }

  /** `<what> <value> not found` with `details[field]`: the value a client named, quoted clipped in both. */
  static of(what: string, value: string, field = 'id'): NotFoundError {
    return new NotFoundError(`${what} ${clipped(value)} not found`, { [field]: clipped(value) });
  }
}

export class ConflictError extends ApiError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(409, 'conflict', message, details);
  }
}

export class PayloadTooLargeError extends ApiError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(413, 'payload_too_large', message, details);
  }
}

export class RateLimitedError extends ApiError {
  constructor(message: string, retryAfterSeconds: number) {
    super(429, 'rate_limited', message, { retry_after_seconds: retryAfterSeconds }, { 'retry-after': String(retryAfterSeconds) });
  }
}

/** A dependency (Postgres, NATS) is unavailable for now: the same request may succeed after `Retry-After`. */
export class ServiceUnavailableError extends ApiError {
  constructor(message: string, retryAfterSeconds = 1, details: Record<string, unknown> = {}) {
    super(503, 'unavailable', message, { ...details, retry_after_seconds: retryAfterSeconds }, { 'retry-after': String(retryAfterSeconds) });
  }
}
