import { Cron } from 'croner';
import type { TimerSpec } from '../actors/props';

/** Where a timer's schedule stands, persisted in the actor state. */
export interface TimerState {
  /** Interval timers count slots from here (activation time). */
  anchorMs: number;
  /** The last slot whose invocation was processed. */
  lastSlotMs?: number;
  /** Schedule the state belongs to (a changed schedule restarts the slots). */
  specKey: string;
}

export function specKey(spec: TimerSpec): string {
  return 'cron' in spec ? `cron:${spec.cron}:${spec.timezone ?? ''}` : `every:${spec.intervalSeconds}`;
}

const cronCache = new Map<string, Cron>();
function cronOf(spec: { cron: string; timezone?: string }): Cron {
  const key = `${spec.cron}|${spec.timezone ?? ''}`;
  let c = cronCache.get(key);
  if (!c) {
    c = new Cron(spec.cron, { timezone: spec.timezone, paused: true });
    if (cronCache.size > 10_000) cronCache.clear();
    cronCache.set(key, c);
  }
  return c;
}

/** The first slot strictly after `afterMs`. */
export function slotAfter(spec: TimerSpec, state: TimerState, afterMs: number): number {
  if ('cron' in spec) {
    const next = cronOf(spec).nextRun(new Date(afterMs));
    if (!next) throw new Error(`cron "${spec.cron}" has no future run`);
    return next.getTime();
  }
  const step = spec.intervalSeconds * 1000;
  const k = Math.floor((afterMs - state.anchorMs) / step) + 1;
  return state.anchorMs + Math.max(1, k) * step;
}

/**
 * What to fire when a replica (re)starts a timer at `nowMs`: the next future
 * slot, plus at most one catch-up slot when slots were missed since the last
 * processed one (no double fire: a processed slot is never fired again).
 */
export function planTimer(spec: TimerSpec, state: TimerState, nowMs: number): { catchUpMs?: number; nextMs: number } {
  const from = state.lastSlotMs ?? state.anchorMs;
  const first = slotAfter(spec, state, from);
  if (first > nowMs) return { nextMs: first };
  return { catchUpMs: Math.max(first, latestSlot(spec, state, nowMs)), nextMs: slotAfter(spec, state, nowMs) };
}

/**
 * The latest slot at or before `nowMs`, in one look-up: walking the slots from the last processed one took a
 * timezone conversion per slot (a cron every minute, a week away: 10,000 of them, a third of a second per source).
 */
function latestSlot(spec: TimerSpec, state: TimerState, nowMs: number): number {
  if (!('cron' in spec)) {
    const step = spec.intervalSeconds * 1000;
    return state.anchorMs + Math.floor((nowMs - state.anchorMs) / step) * step;
  }
  // A run in the same second as the reference, before it, is included: a slot at `nowMs` is.
  return cronOf(spec).previousRuns(1, new Date(nowMs + 1))[0]?.getTime() ?? 0;
}

/** The event a timer run receives (shared with the api's manual run of a timer source). */
export { timerEvent } from '@app/component-model';
