import type { EmittedEvent } from '@app/contracts';

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

/** How a truncated event is marked: `event` becomes this object (see docs/events.md). */
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
  /** The `summary` given to `$emit`, only when there was one (an extension; metadata keeps the spec's three fields). */
  summary?: string;
}

/** `truncateBytes` undefined: the full event (`expand=event`). */
export function toEventSummary(row: EventSummaryRow, truncateBytes?: number): EventSummaryDto {
  let event = row.event;
  if (truncateBytes !== undefined && row.size_bytes > truncateBytes) {
    event = { $truncated: true, size_bytes: row.size_bytes, preview: JSON.stringify(row.event).slice(0, truncateBytes) } satisfies TruncatedEvent;
  }
  return withSummary({ id: row.id, indexed_at_ms: Number(row.indexed_at_ms), event, metadata: { emit_id: row.emit_id, name: row.name, emitter_id: row.emitter_id } }, row.summary);
}

function withSummary(dto: EventSummaryDto, summary: string | null | undefined): EventSummaryDto {
  if (summary) dto.summary = summary;
  return dto;
}

/** The summary of an event read straight from the emit stream (SSE): full data, `indexed_at_ms` = emit time. */
export function summaryOfEmit(e: EmittedEvent): EventSummaryDto {
  return withSummary({ id: e.id, indexed_at_ms: e.emittedAtMs, event: e.event ?? null, metadata: { emit_id: e.emitId, name: e.name ?? '', emitter_id: e.emitterId } }, e.summary);
}

/** Splits an event id `<epoch_ms>-<seq>`; undefined when malformed. */
export function parseEventId(id: string): { ms: number; seq: number } | undefined {
  const m = /^(\d{1,15})-(\d{1,9})$/.exec(id);
  return m ? { ms: Number(m[1]), seq: Number(m[2]) } : undefined;
}
