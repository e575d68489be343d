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

/**
 * Deletes an emitter's summaries, all of them or an inclusive id range (either end optional; a malformed end
 * deletes nothing). Its classes are trimmed first: summaries past the retention count that no trim removed yet
 * would otherwise move up into the newest `retention` of their class (which lists show and trims keep) once
 * newer ones are deleted. Returns how many were deleted.
 */
export async function deleteSummaries(em: EntityManager, retention: number, emitterId: string, startId?: string, endId?: string): Promise<number> {
  const where = ['emitter_id = ?'];
  const params: unknown[] = [emitterId];
  for (const [id, op] of [[startId, '>='], [endId, '<=']] as const) {
    if (!id) continue;
    const p = parseEventId(id);
    if (!p) return 0;
    where.push(`(id_ms, id_seq) ${op} (?, ?)`);
    params.push(p.ms, p.seq);
  }
  await trimSummaries(em, CHANNEL_CLASSES.map((c) => ({ e: emitterId, c })), retention);
  const res = (await em.getConnection().execute(`delete from event_summaries where ${where.join(' and ')}`, params, 'run')) as { affectedRows?: number };
  return res.affectedRows ?? 0;
}
