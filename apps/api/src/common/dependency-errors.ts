import { ApiError, ConflictError, ServiceUnavailableError } from '@app/contracts';
import { classifyDbError } from '@app/db';
import { isNatsUnavailable, natsUnavailableError } from '@app/nats';

/** Seconds a client is asked to wait when no database connection was free in time (the pool is saturated). */
const BUSY_RETRY_AFTER_SECONDS = 2;

/**
 * The answer to an error of Postgres or NATS that reached the top of a request: `503 unavailable` with
 * `Retry-After` while a dependency is down, restarting or saturated, `409 conflict` when it collided with a
 * concurrent change. Undefined for anything else (a bug: 500). As with any 5xx, a request that changes
 * things may have been partly done (a create cut off after its insert exists).
 */
export function dependencyError(e: unknown): ApiError | undefined {
  if (isNatsUnavailable(e)) return natsUnavailableError();
  switch (classifyDbError(e)) {
    case 'unavailable':
      return new ServiceUnavailableError('the service cannot reach its database right now: retry later', 1);
    case 'busy':
      return new ServiceUnavailableError('the service could not get its database to answer in time (busy, or unreachable): retry later', BUSY_RETRY_AFTER_SECONDS);
    case 'conflict':
      return new ConflictError('the request collided with a concurrent change: retry it', { retryable: true });
    default:
      return undefined;
  }
}

/** One line naming a dependency's error: its class, code and the end of its message (where pg and knex put the reason, after the SQL). */
export function describeCause(e: unknown): string {
  const err = e as Error & { code?: unknown };
  const message = String(err?.message ?? e).replace(/\s+/g, ' ');
  return `${err?.name ?? 'Error'}${err?.code !== undefined ? ` ${String(err.code)}` : ''}: ${message.length > 200 ? `…${message.slice(-200)}` : message}`;
}
