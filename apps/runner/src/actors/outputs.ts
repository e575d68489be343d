import { type Chain, type EmittedEvent, utf8Prefix } from '@app/contracts';
import type { EmitRecord, ExecuteResult } from '@app/sandbox';
import { applyDedupe, DedupeState, DedupeStrategy } from './dedupe';
import { EmitterClock, normalizeTs } from './emit-ids';

export interface OutputContext {
  sourceId: string;
  ownerId: string;
  /** Prefix of every emit id (`Nats-Msg-Id`), so a re-run of the same invocation cannot publish twice. */
  invocationId: string;
  dedupe?: DedupeStrategy;
  /** The event that triggered the run (in `$errors` events). */
  originalEvent: unknown;
  now: number;
  /** The invocation's chain of subscriptions: its events carry it on. */
  chain: Chain;
}

export interface Outputs {
  events: EmittedEvent[];
  dedupe: DedupeState;
  dedupeChanged: boolean;
}

export interface ErrorInfo {
  name: string;
  message: string;
  stack?: string;
}

/** `$errors` event body: `{ error: { name, message, stack }, original_event, ts }`. */
export function errorEvent(error: ErrorInfo, originalEvent: unknown, ts: number): Record<string, unknown> {
  return { error: { name: error.name, message: error.message, stack: error.stack ?? '' }, original_event: originalEvent ?? null, ts };
}

/** The preview a too-large triggering event keeps: as event summaries cut theirs (SUMMARY_TRUNCATE_BYTES). */
const ORIGINAL_PREVIEW_BYTES = 1024;

/**
 * The triggering event as a `$errors` event carries it: unchanged, or — when its
 * JSON is over the event size limit (a large HTTP body is there twice, raw and
 * parsed) — the marker event summaries use for truncated data, so that the
 * `$errors` event stays publishable.
 */
export function originalEventWithin(event: unknown, maxBytes: number): unknown {
  if (event === undefined || event === null) return null;
  const json = JSON.stringify(event) ?? 'null';
  const size = Buffer.byteLength(json);
  return size <= maxBytes ? event : { $truncated: true, size_bytes: size, preview: utf8Prefix(json, ORIGINAL_PREVIEW_BYTES) };
}

/** Orders emits oldest to newest when any carries a `ts` (stable; events without one count as "now"). */
export function orderEmits(emits: EmitRecord[], now: number): { record: EmitRecord; ts: number | undefined }[] {
  const withTs = emits.map((record, index) => ({ record, ts: normalizeTs(record.meta?.ts), index }));
  if (withTs.some((e) => e.ts !== undefined)) withTs.sort((a, b) => (a.ts ?? now) - (b.ts ?? now) || a.index - b.index);
  return withTs.map(({ record, ts }) => ({ record, ts }));
}

/**
 * Turns a sandbox result into the events to publish: logs as `$logs`, emits
 * ordered and deduped with ids `<epoch_ms>-<seq>`, a thrown error and every
 * emit rejected by dedupe as `$errors`.
 */
export function buildOutputs(result: ExecuteResult, ctx: OutputContext, dedupe: DedupeState, clock: EmitterClock): Outputs {
  const events: EmittedEvent[] = [];
  const base = { emitterId: ctx.sourceId, ownerId: ctx.ownerId, emittedAtMs: ctx.now, chain: ctx.chain };
  const push = (kind: string, index: number, name: string, event: unknown, ts: number, extra: Partial<EmittedEvent> = {}): void => {
    events.push({ ...base, id: clock.next(), name, event, ts, emitId: `${ctx.invocationId}:${kind}${index}`, ...extra });
  };
  (result.logs ?? []).forEach((log, i) => push('l', i, '$logs', { ts: log.ts, k: log.k, msg: log.msg }, log.ts));

  const ordered = orderEmits(result.emits ?? [], ctx.now);
  const outcome = applyDedupe(
    ctx.dedupe,
    ordered.map((o) => ({ item: o, id: o.record.meta?.id })),
    dedupe,
  );
  outcome.emitted.forEach(({ record, ts }, i) => {
    const { id, name, summary, ts: _ts, ...extra } = record.meta ?? {};
    void _ts;
    const meta: Record<string, unknown> = { ...extra };
    if (id !== undefined) meta.id = id;
    push('e', i, typeof name === 'string' ? name : '', record.event, ts ?? ctx.now, {
      ...(typeof summary === 'string' ? { summary } : {}),
      ...(Object.keys(meta).length ? { meta } : {}),
    });
  });
  outcome.rejected.forEach(({ item, reason }, i) => {
    push('d', i, '$errors', errorEvent({ name: 'DedupeError', message: `event not emitted: ${reason}` }, item.record.event, ctx.now), ctx.now);
  });
  if (result.error) push('x', 0, '$errors', errorEvent(result.error, ctx.originalEvent, ctx.now), ctx.now);
  return { events, dedupe: outcome.state, dedupeChanged: outcome.changed };
}
