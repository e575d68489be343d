import type { KV } from 'nats';
import { decodeJson, encodeJson } from '@app/contracts';
import type { DedupeState } from './dedupe';
import type { EmitterClockState } from './emit-ids';
import type { TimerState } from '../timers/timer-slots';

export type Hook = 'deploy' | 'activate' | 'deactivate';

/** KV `source-state`, key = source id: everything an actor must keep across replicas. */
export interface ActorState {
  /** Last desired revision fully applied (0 = never). */
  appliedRev: number;
  /**
   * Lifecycle flags are persisted after every hook, so a replica taking over in
   * the middle of a transition plans the remaining hooks from them: each hook
   * runs once per transition (a hook cut off by a crash runs again).
   */
  /** `deploy()` has run. */
  deployed: boolean;
  /** `activate()` ran more recently than `deactivate()`. */
  active: boolean;
  /** Code and props currently applied (what `deactivate()` runs with). */
  codeHash?: string;
  configuredProps?: Record<string, unknown>;
  endpointUrl?: string;
  db: Record<string, unknown>;
  dedupe: DedupeState;
  emitter: EmitterClockState;
  timer?: TimerState;
  /** Recently finished invocation ids: a redelivered one is acknowledged without running again. */
  recent: string[];
  /** Which replica acquisition wrote last; a stale owner's compare-and-set fails. */
  fence: string;
}

export function emptyState(fence: string): ActorState {
  return { appliedRev: 0, deployed: false, active: false, db: {}, dedupe: {}, emitter: { lastMs: 0, seq: 0 }, recent: [], fence };
}

export const RECENT_INVOCATIONS = 64;

/** Room kept in a state message (a source's or a workflow's) beside the dbs: dedupe cache, recent invocations, timer, fence. */
export const STATE_ROOM_BYTES = 64 * 1024;

/** Compare-and-set failed: another writer changed the state since it was read. */
export class StateConflictError extends Error {}

export interface StoredState {
  state: ActorState;
  /** KV revision; 0 when the entry does not exist yet. */
  revision: number;
}

/** Port over the `source-state` bucket (fakes in unit tests). */
export interface ActorStateStore {
  load(sourceId: string): Promise<StoredState | null>;
  /** Writes with compare-and-set on `revision` (0 = create); returns the new revision. */
  save(sourceId: string, state: ActorState, revision: number): Promise<number>;
  remove(sourceId: string, revision: number): Promise<void>;
}

const isConflict = (e: unknown): boolean => /wrong last sequence|key exists|10071/i.test(String((e as Error)?.message ?? e));

export class KvActorStateStore implements ActorStateStore {
  constructor(private readonly kv: KV) {}

  async load(sourceId: string): Promise<StoredState | null> {
    const e = await this.kv.get(sourceId);
    if (!e || e.operation !== 'PUT' || e.value.length === 0) return null;
    return { state: decodeJson<ActorState>(e.value), revision: e.revision };
  }

  async save(sourceId: string, state: ActorState, revision: number): Promise<number> {
    try {
      return revision === 0 ? await this.kv.create(sourceId, encodeJson(state)) : await this.kv.update(sourceId, encodeJson(state), revision);
    } catch (e) {
      if (isConflict(e)) throw new StateConflictError(`state of ${sourceId} changed concurrently`);
      throw e;
    }
  }

  async remove(sourceId: string, revision: number): Promise<void> {
    try {
      await this.kv.purge(sourceId, revision ? { previousSeq: revision } : undefined);
    } catch (e) {
      if (isConflict(e)) throw new StateConflictError(`state of ${sourceId} changed concurrently`);
      throw e;
    }
  }
}

/**
 * Reads a state and writes `fence` into it with compare-and-set (`withFence` builds the state to write from what was
 * read, or from nothing). Another writer in between (the previous owner's last write) is waited out and read again,
 * up to 5 times; a stopped actor (`stopped()`: its partition lost or handed back) never writes its fence over a new
 * owner's. Returns the state written, or null when there was none and `withFence(null)` is null.
 */
export async function loadWithFence(store: ActorStateStore, id: string, stopped: () => boolean, withFence: (found: ActorState | null) => ActorState | null): Promise<StoredState | null> {
  for (let attempt = 0; ; attempt++) {
    const found = await store.load(id);
    const state = withFence(found?.state ?? null);
    if (!state) return null;
    try {
      if (stopped()) throw new StateConflictError('actor stopped');
      return { state, revision: await store.save(id, state, found?.revision ?? 0) };
    } catch (e) {
      if (!(e instanceof StateConflictError) || attempt >= 5 || stopped()) throw e;
      await new Promise((r) => setTimeout(r, 25 << attempt));
    }
  }
}

/** Sets a db key as an own property: defined, not assigned, so that a key `__proto__` (a db key like any other) does not set the object's prototype. */
export function setDbKey(db: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(db, key, { value, enumerable: true, writable: true, configurable: true });
}

/** `db` with `writes` applied (an undefined value deletes its key). */
export function withWrites(db: Record<string, unknown>, writes: Record<string, unknown>): Record<string, unknown> {
  const keys = Object.keys(writes);
  if (!keys.length) return db;
  const next = { ...db };
  for (const k of keys) {
    if (writes[k] === undefined) delete next[k];
    else setDbKey(next, k, writes[k]);
  }
  return next;
}
