import { ApiError } from '@app/contracts';

/** Answers that mean the caller may no longer read the stream: the key is revoked, or the source (workflow) is not theirs any more. */
const DENIED = new Set([401, 403, 404]);

/**
 * The access check an event stream repeats at every keep-alive: false (close the stream) only when the
 * check is denied; a check that fails for another reason (Postgres busy or away for a moment) keeps the
 * stream open until the next keep-alive asks again — a transient error once closed streams under load.
 */
export function keepAliveAccess(check: () => Promise<unknown>): () => Promise<boolean> {
  return async () => {
    try {
      await check();
      return true;
    } catch (e) {
      return !(e instanceof ApiError && DENIED.has(e.status));
    }
  };
}
