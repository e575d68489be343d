import type { AppConfig } from '@app/config';

interface Bucket {
  tokens: number;
  atMs: number;
}

/** Buckets kept at most before the full ones (accounts that emitted nothing lately) are dropped. */
const BUCKETS_MAX = 10_000;

/** The budgets an account's events are published within: their number and their bytes (either may be absent). */
export interface EmitBudgets {
  events?: EmitBudget;
  bytes?: EmitBudget;
}

/**
 * How fast one account's sources and workflows may publish events from this runner: a token bucket per account
 * (EMITS_PER_SECOND_PER_ACCOUNT, a burst of `burst`; EMITS_BYTES_PER_SECOND_PER_ACCOUNT counts bytes instead).
 * Over it, publishing waits — the runs are not refused and nothing is dropped: the account's invocations wait,
 * its backlog grows and its own endpoints are answered 429 (ingest back-pressure). One account's loop of
 * subscriptions or a run emitting thousands of events at every request filled EMITS faster than the delivery app
 * routes it, and every account's events waited behind them.
 */
export class EmitBudget {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    // Monotonic: a wall clock set back by minutes made every account owe minutes of events.
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Takes `n` events of `owner`'s budget; returns how long to wait (ms) before publishing them, 0 when within it.
   * Events taken beyond the budget are owed: the next take of the account waits for them too, so an account's
   * publishes wait in turn.
   */
  take(owner: string, n: number): number {
    if (this.perSecond <= 0 || n <= 0) return 0;
    const now = this.now();
    const b = this.refilled(owner, now);
    b.tokens -= n;
    return b.tokens >= 0 ? 0 : Math.ceil((-b.tokens * 1000) / this.perSecond);
  }

  /** How long until `owner`'s publishes no longer wait (ms; 0 when it owes nothing). Takes nothing. */
  owedMs(owner: string): number {
    const b = this.buckets.get(owner);
    if (!b || this.perSecond <= 0) return 0;
    const tokens = b.tokens + (Math.max(0, this.now() - b.atMs) * this.perSecond) / 1000;
    return tokens >= 0 ? 0 : Math.ceil((-tokens * 1000) / this.perSecond);
  }

  private refilled(owner: string, now: number): Bucket {
    let b = this.buckets.get(owner);
    if (!b) {
      if (this.buckets.size >= BUCKETS_MAX) this.dropFull(now);
      this.buckets.set(owner, (b = { tokens: this.burst, atMs: now }));
      return b;
    }
    b.tokens = Math.min(this.burst, b.tokens + (Math.max(0, now - b.atMs) * this.perSecond) / 1000);
    b.atMs = now;
    return b;
  }

  private dropFull(now: number): void {
    for (const [owner, b] of this.buckets) if (b.tokens + ((now - b.atMs) * this.perSecond) / 1000 >= this.burst) this.buckets.delete(owner);
  }
}

/**
 * The runner's budgets: EMITS_PER_SECOND_PER_ACCOUNT with a burst of ten seconds' worth, never less than one full
 * invocation's emits; EMITS_BYTES_PER_SECOND_PER_ACCOUNT with a burst of ten seconds' worth, never less than one
 * largest event.
 */
export function emitBudgetsOf(config: Pick<AppConfig, 'emitsPerSecondPerAccount' | 'emitsBytesPerSecondPerAccount' | 'emitsPerInvocation' | 'eventMaxBytes'>): EmitBudgets {
  const { emitsPerSecondPerAccount: rate, emitsBytesPerSecondPerAccount: bytes } = config;
  return {
    events: rate > 0 ? new EmitBudget(rate, Math.max(rate * 10, config.emitsPerInvocation)) : undefined,
    bytes: bytes > 0 ? new EmitBudget(bytes, Math.max(bytes * 10, config.eventMaxBytes)) : undefined,
  };
}

/** How long until `owner` owes neither budget anything (ms). */
export const owedMs = (budgets: EmitBudgets, owner: string): number => Math.max(budgets.events?.owedMs(owner) ?? 0, budgets.bytes?.owedMs(owner) ?? 0);

/** The DI token of the runner's one set of budgets (its publisher takes from them; its sandboxes' answers wait on them). */
export const EMIT_BUDGETS = Symbol('EMIT_BUDGETS');
