import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError, RateLimitedError } from '@app/contracts';

/** What one account (a user's or an org's namespace) may hold at most, and how each is counted. */
const QUOTAS = {
  sources: { setting: 'SOURCES_MAX_PER_ACCOUNT', count: `select count(*)::int as n from sources where owner_id = ? and deleted_at is null` },
  workflows: { setting: 'WORKFLOWS_MAX_PER_ACCOUNT', count: `select count(*)::int as n from workflows where owner_id = ? and deleted_at is null` },
  webhooks: { setting: 'WEBHOOKS_MAX_PER_ACCOUNT', count: `select count(*)::int as n from webhooks where owner_id = ?` },
  subscriptions: {
    setting: 'SUBSCRIPTIONS_MAX_PER_ACCOUNT',
    count: `select count(*)::int as n from (select owner_id from subscriptions union all select owner_id from auto_subscriptions) s where owner_id = ?`,
  },
} as const;

export type QuotaResource = keyof typeof QUOTAS;

/** 403: the account already holds as many of a resource as its quota allows. */
export class QuotaExceededError extends ApiError {
  constructor(resource: QuotaResource, limit: number, message?: string) {
    super(403, 'quota_exceeded', message ?? `this account already has ${limit} ${resource}, the most it may have (${QUOTAS[resource].setting}); delete some to make room`, { resource, limit });
  }
}

/**
 * Inside a transaction, serializes the account's checks of `what` until it ends. Outside one (an early check, so
 * that a refused request does no costly work first) there is nothing to hold the lock for.
 */
export async function lockAccount(em: EntityManager, what: string, ownerId: string): Promise<void> {
  if (em.isInTransaction()) await em.execute(`select pg_advisory_xact_lock(hashtext(?))`, [`quota:${what}:${ownerId}`]);
}

/**
 * Refuses to add one more `resource` to `ownerId` when it already holds `limit` (0 = no quota). Run it inside
 * the transaction that inserts: it holds a per-account lock until that transaction ends, so concurrent creates
 * are counted one after the other and never pass the quota together.
 */
export async function assertRoomFor(em: EntityManager, resource: QuotaResource, ownerId: string, limit: number): Promise<void> {
  if (!limit) return;
  await lockAccount(em, resource, ownerId);
  const [row] = (await em.execute(QUOTAS[resource].count, [ownerId])) as { n: number }[];
  if ((row?.n ?? 0) >= limit) throw new QuotaExceededError(resource, limit);
}

/**
 * As `assertRoomFor`, for `adding` of `resource` at once (the subscriptions a new source or workflow gets from its
 * account's auto-subscriptions): refused when the account's count plus them would pass `limit`. Run it inside the
 * transaction that inserts them; it holds the same per-account lock.
 */
export async function assertRoomForMore(em: EntityManager, resource: QuotaResource, ownerId: string, limit: number, adding: number, what: string): Promise<void> {
  if (!limit || adding <= 0) return;
  await lockAccount(em, resource, ownerId);
  const [row] = (await em.execute(QUOTAS[resource].count, [ownerId])) as { n: number }[];
  const n = row?.n ?? 0;
  if (n + adding <= limit) return;
  throw new QuotaExceededError(resource, limit, `this account has ${n} ${resource}, and the ${adding} ${what} would pass the most it may have, ${limit} (${QUOTAS[resource].setting}); delete some to make room`);
}

const DAY_MS = 24 * 3600 * 1000;
/** What a save counts at least: the rows one account's saves of a day can reach stay few (16,384 at 256 MiB). */
export const MIN_SAVE_BYTES = 16 * 1024;
/**
 * What a saved row holds: its code and bundle, and what was read from the code (description, props, meta: up to the
 * 8 MiB a description may be, made by a few hundred bytes of code). Read without detoasting: `octet_length` of text is
 * its length as stored, `pg_column_size` of jsonb its stored (possibly compressed) size.
 */
const SAVE_BYTES = `greatest(octet_length(code) + coalesce(octet_length(bundle), 0) + coalesce(octet_length(description), 0) + pg_column_size(configurable_props) + pg_column_size(meta), ${MIN_SAVE_BYTES})`;

/**
 * Refuses a component save of `bytes` (its code and bundle, and once read what was read from it: `savedBytes`; at
 * least MIN_SAVE_BYTES) when the account's saves of the
 * last 24 hours plus it would pass `limit` (0 = no bound; callers keep it at least the largest save): 429 with
 * `Retry-After` until enough of them have aged out of the window. Saved components cannot be deleted, so this bounds
 * how fast one account can grow the service's storage. Run it inside the transaction that inserts, as `assertRoomFor`.
 */
export async function assertComponentBytesToday(em: EntityManager, ownerId: string, bytes: number, limit: number, now = Date.now()): Promise<void> {
  if (!limit) return;
  const charge = Math.max(bytes, MIN_SAVE_BYTES);
  await lockAccount(em, 'component-bytes', ownerId);
  const since = now - DAY_MS;
  const [{ saved }] = (await em.execute(`select coalesce(sum(${SAVE_BYTES}), 0)::float8 as saved from components where owner_id = ? and created_at_ms > ?`, [ownerId, since])) as { saved: number }[];
  if (saved + charge <= limit) return;
  // The save whose leaving the window, with every older one, makes room for this one.
  const [room] = (await em.execute(
    `select at from (select created_at_ms::float8 as at, sum(${SAVE_BYTES}) over (order by created_at_ms, id) as gone
       from components where owner_id = ? and created_at_ms > ?) s where ? - gone + ? <= ? order by at limit 1`,
    [ownerId, since, saved, charge, limit],
  )) as { at: number }[];
  const fitsAt = room ? room.at + DAY_MS : now + DAY_MS;
  const message = `this account saved ${saved} bytes of components (code, bundles and what was read from them) in the last 24 hours (each save counting at least ${MIN_SAVE_BYTES}); ${charge} more would pass COMPONENT_BYTES_PER_DAY_PER_ACCOUNT (${limit})`;
  throw new RateLimitedError(message, Math.max(1, Math.ceil((fitsAt - now) / 1000)));
}
