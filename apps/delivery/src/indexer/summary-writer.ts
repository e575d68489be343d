import { EntityManager } from '@mikro-orm/postgresql';
import { EmittedEvent } from '@app/contracts';
import { channelClassOf, parseEventId } from './event-ids';
import { pgJson, pgText } from '../common/pg-text';

interface Row {
  event: EmittedEvent;
  ms: number;
  seq: number;
  json: string;
}

const COLUMNS = 'emitter_id, id, id_ms, id_seq, name, channel_class, owner_id, emit_id, summary, event, meta, size_bytes, indexed_at_ms';
const CHUNK = 200;

/** Writes event summaries in multi-row inserts and trims each touched emitter/class to the retention count. */
export class SummaryWriter {
  constructor(private readonly em: EntityManager, private readonly retention: number) {}

  /** Returns the events that were not indexable (malformed ids). Idempotent: re-inserting an event is a no-op. */
  async write(events: EmittedEvent[]): Promise<EmittedEvent[]> {
    const rows: Row[] = [];
    const rejected: EmittedEvent[] = [];
    for (const event of events) {
      const parts = typeof event?.id === 'string' && typeof event.emitterId === 'string' ? parseEventId(event.id) : undefined;
      if (!parts) rejected.push(event);
      else rows.push({ event, ...parts, json: pgJson(event.event ?? null) });
    }
    const conn = this.em.getConnection();
    const now = Date.now();
    for (let i = 0; i < rows.length; i += CHUNK) {
      const chunk = rows.slice(i, i + CHUNK);
      const params: unknown[] = [];
      const values = chunk.map((r) => {
        const e = r.event;
        params.push(e.emitterId, e.id, r.ms, r.seq, pgText(e.name ?? ''), channelClassOf(e.name ?? ''), e.ownerId ?? '', pgText(e.emitId ?? e.id), pgText(e.summary ?? null), r.json, e.meta ? pgJson(e.meta) : null, Buffer.byteLength(r.json), now);
        return '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?)';
      });
      await conn.execute(`insert into event_summaries (${COLUMNS}) values ${values.join(', ')} on conflict do nothing`, params, 'run');
    }
    const touched = new Map<string, { e: string; c: string }>();
    for (const r of rows) {
      const cls = channelClassOf(r.event.name ?? '');
      touched.set(`${r.event.emitterId}\u0000${cls}`, { e: r.event.emitterId, c: cls });
    }
    if (touched.size) await this.trim([...touched.values()]);
    return rejected;
  }

  /**
   * Keeps the newest `retention` rows of each (emitter, channel class): one
   * statement per group (each planned on its own values: an index range scan),
   * all sent in one round trip (the connection formats the values into the
   * text, so several statements go as one simple query).
   */
  private async trim(groups: { e: string; c: string }[]): Promise<void> {
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

  /** Deletes a source's events, all of them or an inclusive id range (either end optional). */
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
    const res = (await this.em.getConnection().execute(`delete from event_summaries where ${where.join(' and ')}`, params, 'run')) as { affectedRows?: number };
    return res.affectedRows ?? 0;
  }
}
