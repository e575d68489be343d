import { EntityManager } from '@mikro-orm/postgresql';
import { CHANNEL_NAME_MAX_CHARS, channelClassOf, EmittedEvent, longerThan, parseEventId, TimeSlicer } from '@app/contracts';
import { deleteEventRecords, TrimGroup, trimSummaries } from '@app/db';
import { pgJson, pgText } from '../common/pg-text';
import { insertRows, RowColumn } from '../common/pg-rows';

interface Row {
  event: EmittedEvent;
  ms: number;
  seq: number;
  json: string;
}

const COLUMNS: RowColumn[] = [
  { name: 'emitter_id', type: 'text' },
  { name: 'id', type: 'text' },
  { name: 'id_ms', type: 'int8' },
  { name: 'id_seq', type: 'int4' },
  { name: 'name', type: 'text' },
  { name: 'channel_class', type: 'text' },
  { name: 'owner_id', type: 'text' },
  { name: 'emit_id', type: 'text' },
  { name: 'summary', type: 'text' },
  { name: 'event', type: 'json' },
  { name: 'meta', type: 'json' },
  { name: 'size_bytes', type: 'int4' },
  { name: 'indexed_at_ms', type: 'int8' },
];

/**
 * Whether the event's short fields fit their columns (varchar(255)). The runner refuses a longer channel name,
 * but one event Postgres refuses would fail its whole batch again and again, holding every account's events.
 */
function fitsColumns(e: EmittedEvent): boolean {
  return [e.emitterId, e.id, e.name ?? '', e.ownerId ?? '', e.emitId ?? e.id].every((s) => typeof s === 'string' && !longerThan(s, CHANNEL_NAME_MAX_CHARS));
}

/**
 * Most characters of event data in one insert: a larger batch goes as several (each idempotent; the batch is routed
 * once all are committed), so that no single statement is built from 60 MB of one account's events at once.
 */
const INSERT_MAX_CHARS = 4 * 1024 * 1024;

/** Writes event summaries in multi-row inserts, and trims emitter/classes to the retention count. */
export class SummaryWriter {
  /** `asyncCommit`: inserts commit without waiting for their WAL flush (INDEX_ASYNC_COMMIT). */
  constructor(private readonly em: EntityManager, private readonly retention: number, private readonly asyncCommit = false) {}

  /**
   * Inserts the summaries of `events` (idempotent: re-inserting an event is a no-op). Returns the events that
   * were not indexable (malformed ids) and the groups they touched, for `trim`.
   */
  async write(events: EmittedEvent[]): Promise<{ rejected: EmittedEvent[]; touched: TrimGroup[] }> {
    const rows: Row[] = [];
    const rejected: EmittedEvent[] = [];
    // Event by event, handing the event loop back between them: a batch may hold 64 MiB of one run's events.
    const slicer = new TimeSlicer();
    for (const event of events) {
      const parts = typeof event?.id === 'string' && typeof event.emitterId === 'string' ? parseEventId(event.id) : undefined;
      if (!parts || !fitsColumns(event)) rejected.push(event);
      else rows.push({ event, ...parts, json: pgJson(event.event ?? null) });
      if (slicer.due()) await slicer.handBack();
    }
    const now = Date.now();
    let chunk: unknown[][] = [];
    let chars = 0;
    for (const r of rows) {
      const e = r.event;
      chunk.push([e.emitterId, e.id, r.ms, r.seq, pgText(e.name ?? ''), channelClassOf(e.name ?? ''), e.ownerId ?? '', pgText(e.emitId ?? e.id), pgText(e.summary ?? null), r.json, e.meta ? pgJson(e.meta) : null, Buffer.byteLength(r.json), now]);
      chars += r.json.length;
      if (chars < INSERT_MAX_CHARS) continue;
      await insertRows(this.em, 'event_summaries', COLUMNS, chunk, 'on conflict do nothing', this.asyncCommit);
      [chunk, chars] = [[], 0];
    }
    await insertRows(this.em, 'event_summaries', COLUMNS, chunk, 'on conflict do nothing', this.asyncCommit);
    const touched = new Map<string, TrimGroup>();
    for (const r of rows) {
      const cls = channelClassOf(r.event.name ?? '');
      touched.set(`${r.event.emitterId}\u0000${cls}`, { e: r.event.emitterId, c: cls });
    }
    return { rejected, touched: [...touched.values()] };
  }

  /** Keeps the newest `retention` rows of each (emitter, channel class). */
  trim(groups: TrimGroup[]): Promise<void> {
    return trimSummaries(this.em, groups, this.retention);
  }

  /** Deletes a source's events, all of them or an inclusive id range (either end optional): summaries and waiting retries. */
  deleteRange(emitterId: string, startId?: string, endId?: string): Promise<number> {
    return deleteEventRecords(this.em, this.retention, emitterId, startId, endId);
  }
}
