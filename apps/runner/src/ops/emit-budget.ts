import type { AppConfig } from '@app/config';
import { RateBudget } from '@app/contracts';

/** The budgets an account's events are published within: their number and their bytes (either may be absent). */
export interface EmitBudgets {
  events?: RateBudget;
  bytes?: RateBudget;
  /** Accounts whose events are being encoded for publishing, not yet taken from the budgets (with either budget). */
  inHand?: EmitsInHand;
}

/** How long an account's sandbox answers wait, at a time, while its events are in hand. */
const IN_HAND_PAUSE_MS = 20;

/**
 * The accounts whose events the runner is encoding, between their run's answer and the budgets' take. Encoding a
 * large result hands the event loop back (TimeSlicer), and the runner read on meanwhile: the account owed nothing yet,
 * and a second result of tens of MB could be read in full while the first was encoded, two in the runner's memory at
 * once (a runner of 160 MB died of it once, under a loaded machine's slow encoding). While an account is in hand its
 * sandboxes' answers wait unread (owedMs), as while it owes. A small result is encoded without a hand-back: never in
 * hand.
 */
export class EmitsInHand {
  private readonly count = new Map<string, number>();

  add(owners: readonly string[]): void {
    for (const o of owners) this.count.set(o, (this.count.get(o) ?? 0) + 1);
  }

  remove(owners: readonly string[]): void {
    for (const o of owners) {
      const n = (this.count.get(o) ?? 0) - 1;
      if (n > 0) this.count.set(o, n);
      else this.count.delete(o);
    }
  }

  has(owner: string): boolean {
    return this.count.has(owner);
  }
}

/**
 * The runner's budgets: EMITS_PER_SECOND_PER_ACCOUNT with a burst of ten seconds' worth, never less than one full
 * invocation's emits; EMITS_BYTES_PER_SECOND_PER_ACCOUNT with a burst of ten seconds' worth, never less than one
 * largest event. Over them, publishing waits — the runs are not refused and nothing is dropped: the account's
 * invocations wait, its backlog grows and its own endpoints are answered 429 (ingest back-pressure). One account's
 * loop of subscriptions or a run emitting thousands of events at every request filled EMITS faster than the delivery
 * app routes it, and every account's events waited behind them.
 */
export function emitBudgetsOf(config: Pick<AppConfig, 'emitsPerSecondPerAccount' | 'emitsBytesPerSecondPerAccount' | 'emitsPerInvocation' | 'eventMaxBytes'>): EmitBudgets {
  const { emitsPerSecondPerAccount: rate, emitsBytesPerSecondPerAccount: bytes } = config;
  return {
    events: rate > 0 ? new RateBudget(rate, Math.max(rate * 10, config.emitsPerInvocation)) : undefined,
    bytes: bytes > 0 ? new RateBudget(bytes, Math.max(bytes * 10, config.eventMaxBytes)) : undefined,
    inHand: rate > 0 || bytes > 0 ? new EmitsInHand() : undefined,
  };
}

/**
 * Takes what is published (each message of its owner, `bytes` long) from both budgets, and waits what they owe;
 * `heldBack` counts the messages that waited.
 */
export async function withinBudgets(budgets: EmitBudgets, messages: readonly { owner: string; bytes: number }[], heldBack?: { inc(n: number): void }): Promise<void> {
  const { events: count, bytes } = budgets;
  if (!count && !bytes) return;
  const byOwner = new Map<string, { n: number; bytes: number }>();
  for (const m of messages) {
    const t = byOwner.get(m.owner) ?? { n: 0, bytes: 0 };
    t.n++;
    t.bytes += m.bytes;
    byOwner.set(m.owner, t);
  }
  let waitMs = 0;
  for (const [owner, t] of byOwner) waitMs = Math.max(waitMs, count?.take(owner, t.n) ?? 0, bytes?.take(owner, t.bytes) ?? 0);
  if (waitMs <= 0) return;
  heldBack?.inc(messages.length);
  await new Promise((r) => setTimeout(r, waitMs));
}

/** How long until `owner` owes neither budget anything (ms); a moment while its events are in hand. */
export const owedMs = (budgets: EmitBudgets, owner: string): number =>
  Math.max(budgets.events?.owedMs(owner) ?? 0, budgets.bytes?.owedMs(owner) ?? 0, budgets.inHand?.has(owner) ? IN_HAND_PAUSE_MS : 0);

/** The DI token of the runner's one set of budgets (its publisher takes from them; its sandboxes' answers wait on them). */
export const EMIT_BUDGETS = Symbol('EMIT_BUDGETS');
