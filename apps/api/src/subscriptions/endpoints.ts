import { EntityManager, LockMode } from '@mikro-orm/postgresql';
import { BadRequestError, clipped } from '@app/contracts';
import { Source, Webhook, Workflow } from '@app/db';
import { assertAccess, AuthContext } from '../auth/auth.context';

/** Globs an `emitter_id` may be: all of the subscription owner's sources or workflows. */
export const EMITTER_GLOBS = ['dc_*', 'p_*'];

/**
 * The owner of an emitter or listener the caller can reach; 404 when missing or not theirs. With `lock` (inside a
 * transaction) its row is locked (FOR SHARE) until the transaction ends, so a delete of it waits, or has happened.
 */
export async function resolveEmitter(em: EntityManager, auth: AuthContext, id: string, lock = false): Promise<{ ownerId?: string; glob: boolean }> {
  assertEmitterId(id);
  if (EMITTER_GLOBS.includes(id)) return { glob: true };
  const opts = lockIf(lock);
  if (id.startsWith('dc_')) {
    const source = assertAccess(auth, await em.findOne(Source, { id, deletedAt: null }, opts), 'source', id);
    return { ownerId: source.ownerId, glob: false };
  }
  return { ownerId: assertAccess(auth, await em.findOne(Workflow, { id, deletedAt: null }, opts), 'workflow', id).ownerId, glob: false };
}

/** 400 for an emitter_id no subscription can have: another prefix, or a `*` anywhere but in the globs `dc_*` and `p_*`. */
export function assertEmitterId(id: string): void {
  if (EMITTER_GLOBS.includes(id) || (!id.includes('*') && (id.startsWith('dc_') || id.startsWith('p_')))) return;
  throw new BadRequestError('emitter_id must be a source id (dc_…), a workflow id (p_…), or a glob dc_* or p_*', { field: 'emitter_id', value: clipped(id) });
}

/** 400 for a listener_id no subscription can have: a glob, or another prefix. */
export function assertListenerId(id: string): void {
  if (id.includes('*')) throw new BadRequestError('listener_id must be one source (dc_…), workflow (p_…) or webhook (wh_…) id; a glob is only an emitter_id', { field: 'listener_id', value: clipped(id) });
  if (!['dc_', 'wh_', 'p_'].some((p) => id.startsWith(p))) throw new BadRequestError('listener_id must be a source (dc_…), workflow (p_…) or webhook (wh_…) id', { field: 'listener_id', value: clipped(id) });
}

export async function resolveListener(em: EntityManager, auth: AuthContext, id: string, lock = false): Promise<{ ownerId: string }> {
  assertListenerId(id);
  const opts = lockIf(lock);
  if (id.startsWith('dc_')) return { ownerId: assertAccess(auth, await em.findOne(Source, { id, deletedAt: null }, opts), 'source', id).ownerId };
  if (id.startsWith('wh_')) return { ownerId: assertAccess(auth, await em.findOne(Webhook, { id }, opts), 'webhook', id).ownerId };
  return { ownerId: assertAccess(auth, await em.findOne(Workflow, { id, deletedAt: null }, opts), 'workflow', id).ownerId };
}

const lockIf = (lock: boolean) => (lock ? { lockMode: LockMode.PESSIMISTIC_READ } : {});
