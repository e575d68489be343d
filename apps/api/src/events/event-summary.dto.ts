import { BadRequestError, EmittedEvent, utf8Prefix } from '@app/contracts';

/** A row of `event_summaries` as read for the API (event possibly replaced by a preview). */
export interface EventSummaryRow {
  emitter_id: string;
  id: string;
  id_ms: string | number;
  id_seq: number;
  name: string;
  emit_id: string;
  summary: string | null;
  indexed_at_ms: string | number;
  size_bytes: number;
  event: unknown;
}

/** How a truncated event is marked: `event` (or one field of an envelope) becomes this object (see docs/events.md). */
export interface TruncatedEvent {
  $truncated: true;
  size_bytes: number;
  preview: string;
}

export interface EventSummaryDto {
  id: string;
  indexed_at_ms: number;
  event: unknown;
  metadata: { emit_id: string; name: string; emitter_id: string };
  /** The `summary` given to `$emit`: only with `expand=summary` and when there was one (an extension). */
  summary?: string;
}

/** What `expand` asks for: `event` (no truncation), `summary` (the `$emit` summary), or both, comma-separated. */
export interface Expand {
  event: boolean;
  summary: boolean;
}

export function parseExpand(value: unknown): Expand {
  const parts = value === undefined || value === '' ? [] : typeof value === 'string' ? value.split(',').map((s) => s.trim()) : [''];
  if (parts.some((p) => p !== 'event' && p !== 'summary')) {
    throw new BadRequestError('expand may be "event", "summary" or "event,summary"', { field: 'expand' });
  }
  return { event: parts.includes('event'), summary: parts.includes('summary') };
}

function marker(json: string, sizeBytes: number, truncateBytes: number): TruncatedEvent {
  return { $truncated: true, size_bytes: sizeBytes, preview: utf8Prefix(json, truncateBytes) };
}

/**
 * Events whose fields the spec names, a workflow's emit `{ raw_event }` and an `$errors` event
 * `{ original_event, error, … }`: their data is truncated field by field, so that they keep that shape.
 */
function isEnvelope(row: EventSummaryRow): row is EventSummaryRow & { event: Record<string, unknown> } {
  const enveloped = row.name === '$errors' || (row.emitter_id.startsWith('p_') && row.name !== '$logs');
  return enveloped && typeof row.event === 'object' && row.event !== null && !Array.isArray(row.event);
}

/**
 * The fields of an `$errors` event the platform writes (`error`, `original_context`, `ts`) are kept whole up to
 * ERROR_FIELD_KEPT_BYTES: the spec gives them a shape, and the runner bounds a workflow's (a message of 2,000 and a
 * stack of 16 K characters); only the data of the failed run (`original_event`) is cut at the summary's size. A
 * source's error may hold a message and a stack of 64 K characters each: past the bound it is cut as any field, so
 * that a page of 100 errors stays a few MB.
 */
const ERROR_EVENT_KEPT_FIELDS = new Set(['error', 'original_context', 'ts']);
const ERROR_FIELD_KEPT_BYTES = 64 * 1024;
const NONE_KEPT: ReadonlySet<string> = new Set();

function truncateFields(event: Record<string, unknown>, truncateBytes: number, keptWhole: ReadonlySet<string>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(event).map(([k, v]) => {
      const json = JSON.stringify(v) ?? 'null';
      const bytes = Buffer.byteLength(json);
      const bound = keptWhole.has(k) ? ERROR_FIELD_KEPT_BYTES : truncateBytes;
      return [k, bytes > bound ? marker(json, bytes, truncateBytes) : v];
    }),
  );
}

/** `truncateBytes` undefined: the full event (`expand=event`). */
export function toEventSummary(row: EventSummaryRow, truncateBytes: number | undefined, expandSummary: boolean): EventSummaryDto {
  let event = row.event;
  if (truncateBytes !== undefined && row.size_bytes > truncateBytes) {
    event = isEnvelope(row) ? truncateFields(row.event, truncateBytes, row.name === '$errors' ? ERROR_EVENT_KEPT_FIELDS : NONE_KEPT) : marker(JSON.stringify(row.event), row.size_bytes, truncateBytes);
  }
  const dto: EventSummaryDto = { id: row.id, indexed_at_ms: Number(row.indexed_at_ms), event, metadata: { emit_id: row.emit_id, name: row.name, emitter_id: row.emitter_id } };
  return expandSummary ? withSummary(dto, row.summary) : dto;
}

function withSummary(dto: EventSummaryDto, summary: string | null | undefined): EventSummaryDto {
  if (summary) dto.summary = summary;
  return dto;
}

/** The summary of an event read straight from the emit stream (SSE): full data, `indexed_at_ms` = emit time. */
export function summaryOfEmit(e: EmittedEvent, expandSummary: boolean): EventSummaryDto {
  const dto: EventSummaryDto = { id: e.id, indexed_at_ms: e.emittedAtMs, event: e.event ?? null, metadata: { emit_id: e.emitId, name: e.name ?? '', emitter_id: e.emitterId } };
  return expandSummary ? withSummary(dto, e.summary) : dto;
}
