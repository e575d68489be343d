import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError } from '@app/contracts';

/** What one account (a user's or an org's namespace) may hold at most, and how each is counted. */
const QUOTAS = {
  sources: { setting: 'SOURCES_MAX_PER_ACCOUNT', count: `select count(*)::int as n from sources where owner_id = ? and deleted_at is null` },
  workflows: { setting: 'WORKFLOWS_MAX_PER_ACCOUNT', count: `select count(*)::int as n from workflows where owner_id = ? and deleted_at is null` },
  webhooks: { setting: 'WEBHOOKS_MAX_PER_ACCOUNT', count: `select count(*)::int as n from webhooks where owner_id = ?` },
  subscriptions: {
    setting: 'SUBSCRIPTIONS_MAX_PER_ACCOUNT',
    count: `select ((select count(*) from subscriptions where owner_id = ?) + (select count(*) from auto_subscriptions where owner_id = ?))::int as n`,
  },
} as const;

export type QuotaResource = keyof typeof QUOTAS;

/** 403: the account already holds as many of a resource as its quota allows. */
export class QuotaExceededError extends ApiError {
  constructor(resource: QuotaResource, limit: number) {
    super(403, 'quota_exceeded', `this account already has ${limit} ${resource}, the most it may have (${QUOTAS[resource].setting}); delete some to make room`, { resource, limit });
  }
}

/**
 * Refuses to add one more `resource` to `ownerId` when it already holds `limit` (0 = no quota). Run it inside
 * the transaction that inserts: it holds a per-account lock until that transaction ends, so concurrent creates
 * are counted one after the other and never pass the quota together.
 */
export async function assertRoomFor(em: EntityManager, resource: QuotaResource, ownerId: string, limit: number): Promise<void> {
  if (!limit) return;
  await em.execute(`select pg_advisory_xact_lock(hashtext(?))`, [`quota:${resource}:${ownerId}`]);
  const q = QUOTAS[resource];
  const [row] = (await em.execute(q.count, resource === 'subscriptions' ? [ownerId, ownerId] : [ownerId])) as { n: number }[];
  if ((row?.n ?? 0) >= limit) throw new QuotaExceededError(resource, limit);
}
