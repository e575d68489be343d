/**
 * What a failed Postgres call means for the request that made it: the database (or a free connection
 * to it) is unavailable for now, so the same request may succeed later; or it collided with a
 * concurrent change. Works on the errors of pg, knex and MikroORM alike (MikroORM copies the SQLSTATE
 * `code` of the error it wraps).
 */
export type DbFailure = 'unavailable' | 'busy' | 'conflict';

/** SQLSTATE classes and codes that say nothing about the request itself: the server or the connection failed. */
const UNAVAILABLE_CLASSES = ['08', '53', '58']; // connection exception, insufficient resources, system error
const UNAVAILABLE_CODES = new Set([
  '57P01', // admin_shutdown: pg_terminate_backend, a fast shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up, in recovery
  '57P05', // idle_session_timeout
  '25P03', // idle_in_transaction_session_timeout
]);
/** statement_timeout, lock_timeout: the server gave up on a slow statement; the request may succeed later. */
const BUSY_CODES = new Set(['57014', '55P03']);
/** A concurrent transaction won: unique and foreign-key violations, serialization failures, deadlocks. */
const CONFLICT_CODES = new Set(['23505', '23503', '40001', '40P01']);
/** Socket errors on the way to the server (pg and knex pass them through with their errno code). */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
/**
 * Messages of pg and knex that carry no code. Knex's "Transaction query already complete" is the next query of a
 * transaction whose connection died (knex ended the transaction when its connection failed).
 */
const UNAVAILABLE_MESSAGES = /Connection terminated|Connection ended unexpectedly|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable|Client was closed and is not queryable|Transaction query already complete/;
const POOL_TIMEOUT = /Timeout acquiring a connection/;

export function classifyDbError(e: unknown): DbFailure | undefined {
  if (!(e instanceof Error)) return undefined;
  const code = String((e as { code?: unknown }).code ?? '');
  if (/^[0-9A-Z]{5}$/.test(code)) {
    if (CONFLICT_CODES.has(code)) return 'conflict';
    if (BUSY_CODES.has(code)) return 'busy';
    if (UNAVAILABLE_CODES.has(code) || UNAVAILABLE_CLASSES.includes(code.slice(0, 2))) return 'unavailable';
    return undefined;
  }
  if (e.name === 'KnexTimeoutError' || POOL_TIMEOUT.test(e.message)) return 'busy';
  if (SOCKET_CODES.has(code) || UNAVAILABLE_MESSAGES.test(e.message)) return 'unavailable';
  return undefined;
}
