import { EntityManager } from '@mikro-orm/postgresql';

/**
 * The Postgres channel on which a change of who may reach what (a key rotated, a membership added
 * or removed, a plan changed) is announced, by whoever made it (the api, the admin CLI). Every api
 * replica listens and passes it on: open event streams check their access at once, and the
 * delivery apps reload their subscriptions.
 */
export const ACCESS_CHANGED_CHANNEL = 'ess_access_changed';

/** Announces an access change (after it is committed: a notification is delivered at commit). */
export async function notifyAccessChanged(em: EntityManager): Promise<void> {
  await em.getConnection().execute(`select pg_notify('${ACCESS_CHANGED_CHANNEL}', '')`);
}
