import { EntityManager } from '@mikro-orm/postgresql';
import { CHANNEL_NAME_MAX_CHARS, EmittedEvent } from '@app/contracts';
import { CHANNEL_CLASSES, channelClassOf, parseEventId } from './event-ids';
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
  { name: 'event', type: 'jsonb' },
  { name: 'meta', type: 'jsonb' },
  { name: 'size_bytes', type: 'int4' },
  { name: 'indexed_at_ms', type: 'int8' },
];

/**
 * Whether the event's short fields fit their columns (varchar(255)). The runner refuses a longer channel name,
 * but one event Postgres refuses would fail its whole batch again and again, holding every account's events.
 */
function fitsColumns(e: EmittedEvent): boolean {
  return [e.emitterId, e.id, e.name ?? '', e.ownerId ?? '', e.emitId ?? e.id].every((s) => typeof s === 'string' && s.length <= CHANNEL_NAME_MAX_CHARS);
}

/** An emitter's channel class, whose rows `trim` keeps to the retention count. */
export interface TrimGroup {
  e: string;
  c: string;
}

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
    for (const event of events) {
      const parts = typeof event?.id === 'string' && typeof event.emitterId === 'string' ? parseEventId(event.id) : undefined;
      if (!parts || !fitsColumns(event)) rejected.push(event);
      else rows.push({ event, ...parts, json: pgJson(event.event ?? null) });
    }
    const now = Date.now();
    const values = rows.map((r) => {
      const e = r.event;
      return [e.emitterId, e.id, r.ms, r.seq, pgText(e.name ?? ''), channelClassOf(e.name ?? ''), e.ownerId ?? '', pgText(e.emitId ?? e.id), pgText(e.summary ?? null), r.json, e.meta ? pgJson(e.meta) : null, Buffer.byteLength(r.json), now];
    });
    await insertRows(this.em, 'event_summaries', COLUMNS, values, 'on conflict do nothing', this.asyncCommit);
    const touched = new Map<string, TrimGroup>();
    for (const r of rows) {
      const cls = channelClassOf(r.event.name ?? '');
      touched.set(`${r.event.emitterId}\u0000${cls}`, { e: r.event.emitterId, c: cls });
    }
    return { rejected, touched: [...touched.values()] };
  }

  /**
   * Keeps the newest `retention` rows of each (emitter, channel class): one
   * statement per group (each planned on its own values: an index range scan),
   * all sent in one round trip (the connection formats the values into the
   * text, so several statements go as one simple query).
   */
  async trim(groups: TrimGroup[]): Promise<void> {
    const one = `delete from event_summaries where emitter_id = ? and channel_class = ? and (id_ms, id_seq) < (
         select id_ms, id_seq from event_summaries where emitter_id = ? and channel_class = ?
         order by id_ms desc, id_seq desc offset ? limit 1)`;
    for (let i = 0; i < groups.length; i += 100) {
      const chunk = groups.slice(i, i + 100);
      const params: unknown[] = [];
      for (const g of chunk) params.push(g.e, g.c, g.e, g.c, this.retention - 1);
      await this.em.getConnection().execute(chunk.map(() => one).join(';\n'), params, 'run');
    }
  }

  /**
   * Deletes a source's events, all of them or an inclusive id range (either end optional). Its classes are trimmed
   * first: summaries past the retention count that no trim removed yet would otherwise move up into the newest
   * `retention` of their class (which lists show and trims keep) once newer ones are deleted.
   */
  async deleteRange(emitterId: string, startId?: string, endId?: string): Promise<number> {
    const where = ['emitter_id = ?'];
    const params: unknown[] = [emitterId];
    const start = startId ? parseEventId(startId) : undefined;
    const end = endId ? parseEventId(endId) : undefined;
    if (startId && !start) return 0;
    if (endId && !end) return 0;
    if (start) {
      where.push('(id_ms, id_seq) >= (?, ?)');
      params.push(start.ms, start.seq);
    }
    if (end) {
      where.push('(id_ms, id_seq) <= (?, ?)');
      params.push(end.ms, end.seq);
    }
    await this.trim(CHANNEL_CLASSES.map((c) => ({ e: emitterId, c })));
    const res = (await this.em.getConnection().execute(`delete from event_summaries where ${where.join(' and ')}`, params, 'run')) as { affectedRows?: number };
    return res.affectedRows ?? 0;
  }
}
