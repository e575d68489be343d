import { IsolationLevel } from '@mikro-orm/core';
import { EntityManager } from '@mikro-orm/postgresql';

/**
 * Runs `read` in one read-only REPEATABLE READ transaction: every query in it sees the same snapshot, so a page
 * and its `total_count` agree while writers go on (counted first and listed second, an insert between the two
 * gave a page of one event with `total_count: 0`).
 */
export function inSnapshot<T>(em: EntityManager, read: (tx: EntityManager) => Promise<T>): Promise<T> {
  return em.fork().transactional((tx) => read(tx), { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true });
}
