import { createHash } from 'node:crypto';

/** Dedupe state persisted in the actor state. */
export interface DedupeState {
  unique?: string[];
  /** A number, or the decimal text of an integer beyond 2^53 (ids like `"1794219538729349120"` compare exactly). */
  greatest?: number | string;
  last?: string;
}

export type DedupeStrategy = 'unique' | 'greatest' | 'last';

export interface DedupeCandidate<T> {
  item: T;
  /** `meta.id` as emitted: any JSON; only a string or number is an id. */
  id: unknown;
}

export interface DedupeOutcome<T> {
  emitted: T[];
  /** Items that had no usable id under the strategy (reported as `$errors`). */
  rejected: { item: T; reason: string }[];
  state: DedupeState;
  changed: boolean;
}

export const UNIQUE_CACHE_SIZE = 100;

/**
 * Ids longer than this are cached as their SHA-256, and numeric ids longer than this are not numbers: the cache is
 * part of the actor state, one NATS message, and 100 ids of 400 KB each once made every write of it fail (the run
 * came back again and again, its events sent each time, for good).
 */
export const ID_MAX_CACHED_CHARS = 256;

/** An id as the cache holds it: its text, or the hash of a long one. */
export function cachedId(id: string | number): string {
  const text = String(id);
  return text.length > ID_MAX_CACHED_CHARS ? `sha256:${createHash('sha256').update(text).digest('hex')}` : text;
}

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
    // Any other JSON (an object, array, boolean) would be cached as its text: every object the same `[object Object]`.
    else if (typeof c.id !== 'string' && typeof c.id !== 'number') rejected.push({ item: c.item, reason: `the "${strategy}" dedupe strategy needs a string or number id, got ${kindOf(c.id)}` });
    else withId.push({ item: c.item, id: c.id });
  }
  if (strategy === 'unique') return { ...unique(withId, state), rejected };
  if (strategy === 'greatest') return greatest(withId, state, rejected);
  return { ...last(withId, state), rejected };
}

function kindOf(v: unknown): string {
  return Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

function unique<T>(items: { item: T; id: string | number }[], state: DedupeState): Omit<DedupeOutcome<T>, 'rejected'> {
  const cache = [...(state.unique ?? [])];
  const seen = new Set(cache);
  const emitted: T[] = [];
  for (const { item, id } of items) {
    const key = cachedId(id);
    if (seen.has(key)) continue;
    emitted.push(item);
    cache.push(key);
    seen.add(key);
    while (cache.length > UNIQUE_CACHE_SIZE) seen.delete(cache.shift() as string);
  }
  return { emitted, state: { ...state, unique: cache }, changed: emitted.length > 0 };
}

/** A numeric id as a comparable value: integers exactly (BigInt), other numbers as floats; undefined when not numeric. */
function numericId(id: string | number): bigint | number | undefined {
  if (typeof id === 'number') return Number.isFinite(id) ? (Number.isSafeInteger(id) ? BigInt(id) : id) : undefined;
  const t = id.trim();
  if (t.length > ID_MAX_CACHED_CHARS) return undefined;
  if (/^[-+]?\d+$/.test(t)) return BigInt(t);
  const n = t === '' ? NaN : Number(t);
  return Number.isFinite(n) ? n : undefined;
}

function greaterThan(a: bigint | number, b: bigint | number): boolean {
  if (typeof a === typeof b) return a > b;
  return typeof a === 'bigint' ? Number(a) > (b as number) || (Number(a) === b && a > BigInt(Math.trunc(b as number))) : a > Number(b);
}

/** How the cached greatest id is persisted: a number while exact, else its decimal text. */
function storedGreatest(v: bigint | number): number | string {
  if (typeof v === 'number') return v;
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v.toString();
}

function greatest<T>(items: { item: T; id: string | number }[], state: DedupeState, rejected: { item: T; reason: string }[]): DedupeOutcome<T> {
  let max = state.greatest === undefined ? undefined : numericId(state.greatest);
  const emitted: T[] = [];
  for (const { item, id } of items) {
    const n = numericId(id);
    if (n === undefined) {
      const shown = JSON.stringify(id);
      rejected.push({ item, reason: `the "greatest" dedupe strategy needs numeric ids of at most ${ID_MAX_CACHED_CHARS} characters, got ${shown.length > 100 ? `${shown.slice(0, 100)}… (${shown.length} characters)` : shown}` });
      continue;
    }
    if (max === undefined || greaterThan(n, max)) {
      max = n;
      emitted.push(item);
    }
  }
  const next = max === undefined ? undefined : storedGreatest(max);
  return { emitted, rejected, state: { ...state, greatest: next }, changed: next !== state.greatest };
}

function last<T>(items: { item: T; id: string | number }[], state: DedupeState): Omit<DedupeOutcome<T>, 'rejected'> {
  let start = 0;
  if (state.last !== undefined) {
    for (let i = items.length - 1; i >= 0; i--) {
      if (cachedId(items[i].id) === state.last) {
        start = i + 1;
        break;
      }
    }
  }
  const kept = items.slice(start);
  if (kept.length === 0) return { emitted: [], state, changed: false };
  const newest = cachedId(kept[kept.length - 1].id);
  return { emitted: kept.map((k) => k.item), state: { ...state, last: newest }, changed: newest !== state.last };
}
