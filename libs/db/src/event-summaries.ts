import { EntityManager } from '@mikro-orm/postgresql';
import { CHANNEL_CLASSES, parseEventId } from '@app/contracts';

/** An emitter's channel class, whose rows `trimSummaries` keeps to the retention count. */
export interface TrimGroup {
  e: string;
  c: string;
}

/**
 * Keeps the newest `retention` rows of each (emitter, channel class): one statement per group (each planned
 * on its own values: an index range scan), all sent in one round trip (the connection formats the values into
 * the text, so several statements go as one simple query).
 */
export async function trimSummaries(em: EntityManager, groups: TrimGroup[], retention: number): Promise<void> {
  const one = `delete from event_summaries where emitter_id = ? and channel_class = ? and (id_ms, id_seq) < (
       select id_ms, id_seq from event_summaries where emitter_id = ? and channel_class = ?
       order by id_ms desc, id_seq desc offset ? limit 1)`;
  for (let i = 0; i < groups.length; i += 100) {
    const chunk = groups.slice(i, i + 100);
    const params: unknown[] = [];
    for (const g of chunk) params.push(g.e, g.c, g.e, g.c, retention - 1);
    await em.getConnection().execute(chunk.map(() => one).join(';\n'), params, 'run');
  }
}

/** A stored event id (`<ms>-<seq>`) of `webhook_retries` as the pair event summaries keep in `id_ms`, `id_seq`. */
const RETRY_EVENT_ID = `(split_part(event_id, '-', 1)::bigint, split_part(event_id, '-', 2)::int)`;

/**
 * Deletes an emitter's events from Postgres, all of them or an inclusive id range (either end optional; a malformed
 * end deletes nothing): their summaries, and the deliveries of them that wait in `webhook_retries` (a failing
 * webhook's next attempts, deliveries parked for a busy account), which would otherwise still be sent once their
 * webhook answered again. Its classes are trimmed first: summaries past the retention count that no trim removed yet
 * would otherwise move up into the newest `retention` of their class (which lists show and trims keep) once newer
 * ones are deleted. Returns how many summaries were deleted.
 */
export async function deleteEventRecords(em: EntityManager, retention: number, emitterId: string, startId?: string, endId?: string): Promise<number> {
  const range: { op: string; ms: number; seq: number }[] = [];
  for (const [id, op] of [[startId, '>='], [endId, '<=']] as const) {
    if (!id) continue;
    const p = parseEventId(id);
    if (!p) return 0;
    range.push({ op, ...p });
  }
  const where = (pair: string) => range.map((r) => ` and ${pair} ${r.op} (?, ?)`).join('');
  const params = [emitterId, ...range.flatMap((r) => [r.ms, r.seq])];
  await trimSummaries(em, CHANNEL_CLASSES.map((c) => ({ e: emitterId, c })), retention);
  const res = (await em.getConnection().execute(`delete from event_summaries where emitter_id = ?${where('(id_ms, id_seq)')}`, params, 'run')) as { affectedRows?: number };
  // Every id the router stores is `<ms>-<seq>` (it indexes nothing else); the pattern keeps the casts from failing.
  await em.getConnection().execute(`delete from webhook_retries where emitter_id = ? and event_id ~ '^[0-9]{1,15}-[0-9]{1,9}$'${where(RETRY_EVENT_ID)}`, params, 'run');
  return res.affectedRows ?? 0;
}
