/** Dedupe state persisted in the actor state. */
export interface DedupeState {
  unique?: string[];
  greatest?: number;
  last?: string;
}

export type DedupeStrategy = 'unique' | 'greatest' | 'last';

export interface DedupeCandidate<T> {
  item: T;
  id: string | number | undefined;
}

export interface DedupeOutcome<T> {
  emitted: T[];
  /** Items that had no usable id under the strategy (reported as `$errors`). */
  rejected: { item: T; reason: string }[];
  state: DedupeState;
  changed: boolean;
}

export const UNIQUE_CACHE_SIZE = 100;

export function isDedupeStrategy(value: unknown): value is DedupeStrategy {
  return value === 'unique' || value === 'greatest' || value === 'last';
}

/**
 * Applies a dedupe strategy to an invocation's events, already in emit order
 * (oldest first when `ts` was given), exactly as the component model says:
 * `unique` keeps the last 100 ids (FIFO), `greatest` emits only larger numeric
 * ids, `last` emits only what comes after the cached id (all when none matches)
 * and caches the newest emitted id.
 */
export function applyDedupe<T>(strategy: DedupeStrategy | undefined, candidates: DedupeCandidate<T>[], state: DedupeState): DedupeOutcome<T> {
  if (!strategy) return { emitted: candidates.map((c) => c.item), rejected: [], state, changed: false };
  const rejected: { item: T; reason: string }[] = [];
  const withId: { item: T; id: string | number }[] = [];
  for (const c of candidates) {
    if (c.id === undefined || c.id === null || c.id === '') rejected.push({ item: c.item, reason: `an event emitted under the "${strategy}" dedupe strategy needs an id` });
    else withId.push({ item: c.item, id: c.id });
  }
  if (strategy === 'unique') return { ...unique(withId, state), rejected };
  if (strategy === 'greatest') return greatest(withId, state, rejected);
  return { ...last(withId, state), rejected };
}

function unique<T>(items: { item: T; id: string | number }[], state: DedupeState): Omit<DedupeOutcome<T>, 'rejected'> {
  const cache = [...(state.unique ?? [])];
  const seen = new Set(cache);
  const emitted: T[] = [];
  for (const { item, id } of items) {
    const key = String(id);
    if (seen.has(key)) continue;
    emitted.push(item);
    cache.push(key);
    seen.add(key);
    while (cache.length > UNIQUE_CACHE_SIZE) seen.delete(cache.shift() as string);
  }
  return { emitted, state: { ...state, unique: cache }, changed: emitted.length > 0 };
}

function greatest<T>(items: { item: T; id: string | number }[], state: DedupeState, rejected: { item: T; reason: string }[]): DedupeOutcome<T> {
  let max = state.greatest;
  const emitted: T[] = [];
  for (const { item, id } of items) {
    const n = typeof id === 'number' ? id : Number(String(id).trim());
    if (!Number.isFinite(n) || String(id).trim() === '') {
      rejected.push({ item, reason: `the "greatest" dedupe strategy needs numeric ids, got ${JSON.stringify(id)}` });
      continue;
    }
    if (max === undefined || n > max) {
      max = n;
      emitted.push(item);
    }
  }
  return { emitted, rejected, state: { ...state, greatest: max }, changed: max !== state.greatest };
}

function last<T>(items: { item: T; id: string | number }[], state: DedupeState): Omit<DedupeOutcome<T>, 'rejected'> {
  let start = 0;
  if (state.last !== undefined) {
    for (let i = items.length - 1; i >= 0; i--) {
      if (String(items[i].id) === state.last) {
        start = i + 1;
        break;
      }
    }
  }
  const kept = items.slice(start);
  if (kept.length === 0) return { emitted: [], state, changed: false };
  const newest = String(kept[kept.length - 1].id);
  return { emitted: kept.map((k) => k.item), state: { ...state, last: newest }, changed: newest !== state.last };
}
