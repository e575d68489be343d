import { createHmac, timingSafeEqual } from 'node:crypto';
import { BadRequestError, clipped } from '@app/contracts';
import type { EntityManager, EntityName, FilterQuery } from '@mikro-orm/postgresql';

export interface PageQuery {
  limit: number;
  after?: string;
  before?: string;
}

/** The spec's `page_info`: cursors are strings in every paginated response (`""` on an empty page). */
export interface PageInfo {
  total_count: number;
  count: number;
  start_cursor: string;
  end_cursor: string;
}

export interface Page<T> {
  page_info: PageInfo;
  data: T[];
}

/** Reads `limit` (1–100, default 10), `after` and `before` from a query or body. */
export function parsePageQuery(input: Record<string, unknown> | undefined, defaultLimit = 10, maxLimit = 100): PageQuery {
  const q = input ?? {};
  let limit = defaultLimit;
  if (q.limit !== undefined && q.limit !== '') {
    const n = typeof q.limit === 'number' ? q.limit : /^\d+$/.test(String(q.limit)) ? Number(q.limit) : NaN;
    if (!Number.isInteger(n) || n < 1 || n > maxLimit) {
      throw new BadRequestError(`limit must be an integer from 1 to ${maxLimit}`, { in: 'query', field: 'limit', value: typeof q.limit === 'string' ? clipped(q.limit) : q.limit });
    }
    limit = n;
  }
  const cursor = (name: 'after' | 'before'): string | undefined => {
    const v = q[name];
    if (v === undefined || v === '') return undefined;
    if (typeof v !== 'string') throw new BadRequestError(`${name} must be a cursor string`, { in: 'query', field: name });
    return v;
  };
  const page: PageQuery = { limit, after: cursor('after'), before: cursor('before') };
  if (page.after && page.before) throw new BadRequestError('pass either after or before, not both', { in: 'query', fields: ['after', 'before'] });
  return page;
}

/** A position in a list ordered by a numeric key then an id; opaque to clients. */
export interface CursorKey {
  k: number;
  id: string;
}

export function encodeCursor(key: CursorKey): string {
  return Buffer.from(JSON.stringify([key.k, key.id])).toString('base64url');
}

/**
 * Reads a cursor back. Its values go to SQL as a bigint and a text id, so anything else
 * (`[1.5, "x"]`, a NUL byte, an object) is the client's bad cursor, never a database error.
 * `idPattern` narrows the id further where the list keys on something else (event sequence numbers).
 */
export function decodeCursor(cursor: string, param = 'cursor', idPattern = /^[^\u0000]{1,255}$/): CursorKey {
  try {
    const decoded: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(decoded) && decoded.length === 2) {
      const [k, id] = decoded as [unknown, unknown];
      if (typeof k === 'number' && Number.isSafeInteger(k) && k >= 0 && typeof id === 'string' && idPattern.test(id)) return { k, id };
    }
  } catch {
    /* fall through */
  }
  throw new BadRequestError(`${param} is not a valid cursor`, { in: 'query', field: param });
}

/**
 * The list a cursor belongs to (`sources:<owner>`, `webhook_deliveries:<webhook>`) and the service's secrets key. A
 * list's cursors carry a MAC of their position and the list, so that only a cursor this list returned is taken: one of
 * another list, of another account's or org's list, or one made by hand is a `400`, never a page read from it.
 */
export interface CursorScope {
  list: string;
  secretsKey: Buffer;
}

function cursorMac(body: string, scope: CursorScope): Buffer {
  // A key of its own for cursors, derived from the secrets key (which also encrypts secret props).
  const key = createHmac('sha256', scope.secretsKey).update('list cursors').digest();
  return createHmac('sha256', key).update(`${scope.list}\n${body}`).digest().subarray(0, 16);
}

/** A cursor of `scope`'s list: the position, `.`, and its MAC. */
export function signedCursor(key: CursorKey, scope: CursorScope): string {
  const body = encodeCursor(key);
  return `${body}.${cursorMac(body, scope).toString('base64url')}`;
}

function listCursor(cursor: string, param: 'after' | 'before', scope: CursorScope): CursorKey {
  const dot = cursor.lastIndexOf('.');
  const body = cursor.slice(0, dot);
  const mac = Buffer.from(cursor.slice(dot + 1), 'base64url');
  const expected = cursorMac(body, scope);
  if (dot < 0 || mac.length !== expected.length || !timingSafeEqual(mac, expected)) throw new BadRequestError(`${param} is not a valid cursor`, { in: 'query', field: param });
  return decodeCursor(body, param);
}

/**
 * SQL for a newest-first keyset page over `(keyColumn, idColumn)` of `scope`'s list: `after` moves to older items,
 * `before` to newer ones. Returns the extra where-clause, its params, and the order to query in (reverse for
 * `before`, flipped back by `finishPage`).
 */
export function keysetClause(page: PageQuery, keyColumn: string, idColumn: string, scope: CursorScope): { where: string; params: unknown[]; order: 'asc' | 'desc' } {
  if (page.after) {
    const c = listCursor(page.after, 'after', scope);
    return { where: `(${keyColumn}, ${idColumn}) < (?, ?)`, params: [c.k, c.id], order: 'desc' };
  }
  if (page.before) {
    const c = listCursor(page.before, 'before', scope);
    return { where: `(${keyColumn}, ${idColumn}) > (?, ?)`, params: [c.k, c.id], order: 'asc' };
  }
  return { where: 'true', params: [], order: 'desc' };
}

/** Builds the paginated envelope from rows fetched in `order`, newest first in the output. */
export function finishPage<R, T>(
  rows: R[],
  page: PageQuery,
  order: 'asc' | 'desc',
  totalCount: number,
  keyOf: (row: R) => CursorKey,
  toDto: (row: R) => T,
  encode: (key: CursorKey) => string = encodeCursor,
): Page<T> {
  const sorted = order === 'asc' ? [...rows].reverse() : rows;
  return {
    page_info: {
      total_count: totalCount,
      count: sorted.length,
      start_cursor: sorted.length ? encode(keyOf(sorted[0])) : '',
      end_cursor: sorted.length ? encode(keyOf(sorted[sorted.length - 1])) : '',
    },
    data: sorted.map((row) => toDto(row)),
  };
}

/** What `ownedPage` reads: an entity of a table with `owner_id` and `created_at_ms` (and `deleted_at` when `softDeleted`). */
interface OwnedTable<E> {
  entity: EntityName<E>;
  table: string;
  softDeleted: boolean;
}

/**
 * One keyset page of an owner's rows of a table, newest first by (created_at_ms, id), as entities in the page's
 * order, with how many the owner has; `toDto` (given the page's entities, for look-ups they share) makes the envelope.
 */
export async function ownedPage<E extends { id: string; createdAtMs: number }, T>(
  em: EntityManager,
  { entity, table, softDeleted }: OwnedTable<E>,
  ownerId: string,
  page: PageQuery,
  secretsKey: Buffer,
  toDtos: (rows: E[]) => Promise<(row: E) => T> | ((row: E) => T),
): Promise<Page<T>> {
  const scope = { list: `${table}:${ownerId}`, secretsKey };
  const { where, params, order } = keysetClause(page, 'created_at_ms', 'id', scope);
  const live = softDeleted ? ' and deleted_at is null' : '';
  const ids: { id: string }[] = await em.execute(`select id from ${table} where owner_id = ?${live} and ${where} order by created_at_ms ${order}, id ${order} limit ?`, [ownerId, ...params, page.limit]);
  const [{ count }] = (await em.execute(`select count(*)::int as count from ${table} where owner_id = ?${live}`, [ownerId])) as { count: number }[];
  const found: E[] = ids.length ? ((await em.find(entity, { id: { $in: ids.map((r) => r.id) } } as unknown as FilterQuery<E>)) as E[]) : [];
  const byId = new Map(found.map((r) => [r.id, r]));
  const rows = ids.map((r) => byId.get(r.id)).filter((r): r is E => !!r);
  return finishPage(rows, page, order, count, (r) => ({ k: r.createdAtMs, id: r.id }), await toDtos(rows), (k) => signedCursor(k, scope));
}
