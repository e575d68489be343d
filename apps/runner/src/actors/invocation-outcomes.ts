import type { Logger } from 'pino';
import type { DesiredSourceState } from '@app/contracts';
import type { ActorDeps } from './actor-deps';
import type { ActorState } from './actor-state';
import type { SettledDelivery } from './settled-delivery';
import { Executed, replyError } from './source-execution';

/** What deciding and counting an invocation's outcome needs from its actor. */
export interface OutcomeContext {
  deps: ActorDeps;
  sourceId: string;
  desired: DesiredSourceState | undefined;
  now: () => number;
  log: () => Logger;
}

/**
 * Whether an invocation runs; answers, acks and counts one that does not
 * (inactive source, already processed), naks one that arrived before its
 * source's desired state was applied. `seen` gathers the ids admitted so far.
 */
export function admit(c: OutcomeContext, delivery: SettledDelivery, state: ActorState, seen: Set<string>): boolean {
  const { msg } = delivery;
  const kind = msg.kind;
  const skip = (outcome: string, status?: number): false => {
    if (msg.replyTo && status) replyError(c.deps.publisher, msg.replyTo, status, outcome === 'inactive' ? 'the source is not active' : 'the invocation was already processed');
    delivery.ack();
    c.deps.metrics.invocations.inc({ outcome, kind });
    return false;
  };
  // Not applied yet (the desired state or its activation failed for a moment and is retried): it waits.
  if (!c.desired || (c.desired.active && (!state.active || !state.codeHash))) {
    delivery.nak(1000);
    return false;
  }
  if (!state.active || !state.codeHash) return skip('inactive', 404);
  if (seen.has(msg.invocationId)) return skip('duplicate', 409);
  if (kind === 'timer' && msg.scheduledAtMs !== undefined && state.timer?.lastSlotMs !== undefined && msg.scheduledAtMs <= state.timer.lastSlotMs) return skip('duplicate');
  if (kind === 'timer' && msg.scheduledAtMs !== undefined) c.deps.metrics.timerLag.observe(Math.max(0, c.now() - msg.scheduledAtMs) / 1000);
  seen.add(msg.invocationId);
  return true;
}

/** Counts a finished invocation (usage, metrics, a log line for a failure) and acknowledges it. */
export function finished(c: OutcomeContext, delivery: SettledDelivery, result: Executed['result']): void {
  const { msg } = delivery;
  const kind = msg.kind;
  c.deps.publisher.publishUsage(
    { ownerId: c.desired?.ownerId ?? '', sourceId: c.sourceId, invocationId: msg.invocationId, computeMs: Math.round(result.durationMs), finishedAtMs: c.now() },
    delivery.redelivered || kind === 'subscription' || kind === 'timer',
  );
  delivery.ack();
  c.deps.metrics.invocations.inc({ outcome: result.error ? 'error' : 'ok', kind });
  if (result.error || c.deps.logger.isLevelEnabled('debug')) {
    const fields = { invocation_id: msg.invocationId, kind, duration_ms: Math.round(result.durationMs), error: result.error?.message };
    if (result.error) c.log().info(fields, 'run failed (recorded as an $errors event)');
    else c.log().debug(fields, 'run finished');
  }
}
