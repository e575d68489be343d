import { type Chain, type DesiredWorkflowState, type EmittedEvent, redact } from '@app/contracts';
import type { EmitterClock } from '../actors/emit-ids';
import { originalEventWithin } from '../actors/outputs';
import { RunOutcome, StepRecord, triggerContext } from './workflow-run';

const jsonBytes = (v: unknown): number => (v === undefined ? 0 : Buffer.byteLength(JSON.stringify(v)));

/**
 * The steps as the run record keeps them, within `maxBytes` of JSON: each step's value fits the limit on
 * its own, but up to 50 of them may not together, and the record is one stored event. The largest
 * `inputs`, `return_value` and `exports` are replaced by `{ "$truncated": <bytes> }` until the rest fits.
 */
export function stepsWithin(steps: StepRecord[], maxBytes: number): StepRecord[] {
  let total = jsonBytes(steps);
  if (total <= maxBytes) return steps;
  const out = steps.map((s) => ({ ...s }));
  const fields = out.flatMap((s) => (['inputs', 'return_value', 'exports'] as const).map((f) => ({ s, f, bytes: jsonBytes(s[f]) }))).sort((x, y) => y.bytes - x.bytes);
  for (const { s, f, bytes } of fields) {
    if (total <= maxBytes || bytes < 64) break;
    const marker = { $truncated: bytes };
    (s as Record<string, unknown>)[f] = marker;
    total -= bytes - jsonBytes(marker);
  }
  return out;
}

/**
 * The steps as the run record keeps them: cut to `maxBytes`, secret values hidden in what is left (hiding may lengthen
 * it, so it is cut again). Hidden after the cut, so that only what is kept is searched.
 */
function recordedSteps(outcome: RunOutcome, maxBytes: number): StepRecord[] {
  const kept = stepsWithin(outcome.steps, maxBytes);
  const values = outcome.hidden ?? [];
  if (!values.length) return kept;
  const hidden = kept.map((s) => ({
    ...s,
    ...(s.inputs ? { inputs: redact(s.inputs, values) } : {}),
    ...(s.return_value !== undefined ? { return_value: redact(s.return_value, values) } : {}),
    ...(s.exports ? { exports: redact(s.exports, values) } : {}),
    ...(s.exit?.reason !== undefined ? { exit: { reason: redact(s.exit.reason, values) } } : {}),
  }));
  return stepsWithin(hidden, maxBytes);
}

/**
 * `$.send.emit(payload)`: the event as a workflow emit (`{ raw_event }`, as Pipedream stores it) and its channel. An
 * `undefined` payload is `null`, as a source's `$emit(undefined)` is: left `undefined`, JSON dropped the key and the
 * event was `{}`, without the `raw_event` every workflow emit has.
 */
export function emitOf(payload: unknown): { event: { raw_event: unknown }; name: string } {
  if (payload && typeof payload === 'object' && !Array.isArray(payload) && 'raw_event' in payload) {
    const p = payload as { raw_event: unknown; name?: unknown };
    return { event: { raw_event: p.raw_event ?? null }, name: typeof p.name === 'string' ? p.name : '' };
  }
  return { event: { raw_event: payload ?? null }, name: '' };
}

/**
 * What a finished run publishes on `emit.<workflowId>`: each log line and the
 * run record on `$logs`, the `$.send.emit` events (only after a successful run),
 * the `$errors` event of a failed run (the spec's "Workflow error event summary").
 * Emit ids derive from the invocation id, so a rerun publishes nothing twice. Each carries the invocation's
 * chain of subscriptions.
 */
export function runEvents(desired: DesiredWorkflowState, invocationId: string, event: unknown, startedAtMs: number, outcome: RunOutcome, clock: EmitterClock, eventMaxBytes: number, now: number, chain?: Chain): EmittedEvent[] {
  const out: EmittedEvent[] = [];
  const base = { emitterId: desired.workflowId, ownerId: desired.ownerId, emittedAtMs: now, ...(chain ? { chain } : {}) };
  const push = (kind: string, index: number, name: string, body: unknown, ts: number, summary?: string): void => {
    out.push({ ...base, id: clock.next(), name, event: body, ts, emitId: `${invocationId}:${kind}${index}`, ...(summary ? { summary } : {}) });
  };
  outcome.logs.forEach((l, i) => push('l', i, '$logs', { ts: l.ts, k: l.k, msg: l.msg, step: l.step, run_id: invocationId }, l.ts));
  if (outcome.status !== 'error') {
    outcome.sends.filter((s) => s.kind === 'emit').forEach((s, i) => {
      const e = emitOf(s.payload);
      push('e', i, e.name, e.event, now);
    });
  }
  if (outcome.status === 'error' && outcome.error) {
    const err = outcome.error;
    push('x', 0, '$errors', {
      original_event: originalEventWithin(event, Math.floor(eventMaxBytes / 2)),
      original_context: triggerContext(desired, invocationId, startedAtMs),
      error: { code: err.name, cellId: err.cellId, ts: new Date(err.ts).toISOString(), stack: err.stack },
    }, err.ts, `${err.step}: ${err.name}: ${err.message}`.slice(0, 1024));
  }
  const failed = outcome.steps.find((s) => s.error);
  push('r', 0, '$logs', {
    ts: now,
    k: 'run',
    msg: `run ${outcome.status}${failed ? ` at step ${failed.name}: ${failed.error?.message}` : ''} (${outcome.steps.length} of ${desired.steps.length} steps, ${Math.round(outcome.durationMs)} ms)`,
    run_id: invocationId,
    run: { id: invocationId, status: outcome.status, started_at: new Date(startedAtMs).toISOString(), duration_ms: Math.round(outcome.durationMs), deployment_id: desired.deploymentId, failed_step: failed?.name ?? null, steps: recordedSteps(outcome, eventMaxBytes - 8192) },
  }, now);
  return out;
}
