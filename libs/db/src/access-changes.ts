import { randomUUID } from 'node:crypto';
import { EntityManager } from '@mikro-orm/postgresql';

/**
 * The Postgres channel on which a change of who may reach what (a key rotated, a membership added
 * or removed, a plan changed) is announced, by whoever made it (the api, the admin CLI). Every api
 * replica listens and passes it on: open event streams check their access at once, the
 * delivery apps reload their subscriptions, and the sandbox processes the change names are restarted.
 */
export const ACCESS_CHANGED_CHANNEL = 'ess_access_changed';

/** What a notification carries: its own id (the same for every replica that hears it) and the accounts whose sandbox processes must start again. */
export interface AccessChange {
  id: string;
  sandboxes: string[];
}

/**
 * Announces an access change (after it is committed: a notification is delivered at commit). `restartSandboxesOf`:
 * the accounts (users, orgs) where code left running by someone who lost access could see later runs.
 */
export async function notifyAccessChanged(em: EntityManager, restartSandboxesOf: string[] = []): Promise<void> {
  const change: AccessChange = { id: randomUUID(), sandboxes: restartSandboxesOf };
  await em.getConnection().execute(`select pg_notify('${ACCESS_CHANGED_CHANNEL}', ?)`, [JSON.stringify(change)]);
}

/** A notification's payload; one of an older writer (empty) or unreadable restarts nothing. */
export function parseAccessChange(payload: string | undefined): AccessChange {
  try {
    const c = JSON.parse(payload ?? '') as Partial<AccessChange>;
    if (typeof c.id === 'string' && Array.isArray(c.sandboxes)) return { id: c.id, sandboxes: c.sandboxes.filter((a): a is string => typeof a === 'string') };
  } catch {
    // below
  }
  return { id: randomUUID(), sandboxes: [] };
}
