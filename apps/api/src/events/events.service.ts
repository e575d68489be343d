import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { BadRequestError, decodeJson, DeleteEventsMessage, encodeJson, parseEventId, RateLimitedError } from '@app/contracts';
import { deleteEventRecords, inSnapshot, Source, Workflow } from '@app/db';
import { NatsService } from '@app/nats';
import { AuthContext, assertPathResource } from '../auth/auth.context';
import { CursorKey, decodeCursor, finishPage, Page, PageQuery } from '../common/pagination';
import { bytesBoundedPageSql, EXPANDED_PAGE_MAX_BYTES } from './bytes-bounded-page';
import { EmitsEraser } from './emits-eraser';
import { Deletion, DELETIONS_WAITING_PER_ACCOUNT, DeletionLanes } from './deletion-lanes';
import { EventSummaryDto, EventSummaryRow, Expand, toEventSummary } from './event-summary.dto';

export interface SummaryQuery extends PageQuery {
  expand: Expand;
  /** undefined: default and custom channels; otherwise one channel (`""`, a name, `$errors`, `$logs`). */
  eventName?: string;
}

/**
 * A cursor of an event list: the id of the event at the page's edge (`1606511826306-0`, as in
 * Pipedream's examples), or the base64 form earlier versions of this service returned.
 */
function eventCursor(cursor: string, param: 'after' | 'before'): CursorKey {
  const id = parseEventId(cursor);
  return id ? { k: id.ms, id: String(id.seq) } : decodeCursor(cursor, param, /^\d{1,9}$/);
}

const DELETION_RETRY_AFTER_SECONDS = 2;
const DELETIONS_SHUTDOWN_WAIT_MS = 10_000;

/** Reads and deletes the indexed events of a source. */
@Injectable()
export class EventsService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('EventsService');
  private readonly deletions = new DeletionLanes(DELETIONS_WAITING_PER_ACCOUNT, (d) => this.performDelete(d));

  constructor(
    private readonly em: EntityManager,
    private readonly nats: NatsService,
    private readonly emits: EmitsEraser,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Deletions answered 202 are performed before the api stops (NATS and Postgres are still there), up to 10 s. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.deletions.idle(DELETIONS_SHUTDOWN_WAIT_MS);
  }

  async assertSource(auth: AuthContext, id: string): Promise<Source> {
    const source = await this.em.fork().findOne(Source, { id, deletedAt: null });
    return assertPathResource(auth, source, 'source', id);
  }

  async assertWorkflow(auth: AuthContext, id: string): Promise<Workflow> {
    const workflow = await this.em.fork().findOne(Workflow, { id, deletedAt: null });
    return assertPathResource(auth, workflow, 'workflow', id);
  }

  async list(emitterId: string, q: SummaryQuery): Promise<Page<EventSummaryDto>> {
    const channelClass = q.eventName === '$errors' || q.eventName === '$logs' ? q.eventName : 'emits';
    const where = ['emitter_id = ?', 'channel_class = ?'];
    const params: unknown[] = [emitterId, channelClass];
    if (channelClass === 'emits' && q.eventName !== undefined) {
      where.push('name = ?');
      params.push(q.eventName);
    }
    return inSnapshot(this.em, (tx) => this.readPage(tx, emitterId, channelClass, where, params, q));
  }

  private async readPage(tx: EntityManager, emitterId: string, channelClass: string, where: string[], params: unknown[], q: SummaryQuery): Promise<Page<EventSummaryDto>> {
    await this.keepRetained(tx, emitterId, channelClass, where, params);
    const [{ n }] = (await tx.execute(`select count(*)::int as n from event_summaries where ${where.join(' and ')}`, params)) as { n: number }[];
    let order: 'asc' | 'desc' = 'desc';
    const pageWhere = [...where];
    const pageParams = [...params];
    if (q.after || q.before) {
      const c = eventCursor((q.after ?? q.before)!, q.after ? 'after' : 'before');
      pageWhere.push(`(id_ms, id_seq) ${q.after ? '<' : '>'} (?, ?)`);
      pageParams.push(c.k, Number(c.id));
      order = q.after ? 'desc' : 'asc';
    }
    // With full events, a page ends where they reach EXPANDED_PAGE_MAX_BYTES together (at least one).
    const budget = q.expand.event ? EXPANDED_PAGE_MAX_BYTES : Number.MAX_SAFE_INTEGER;
    const rows = (await tx.execute(
      bytesBoundedPageSql('emitter_id, id, name, emit_id, summary, indexed_at_ms, event', pageWhere.join(' and '), order, q.limit),
      [...pageParams, budget],
    )) as EventSummaryRow[];
    return finishPage(
      rows,
      q,
      order,
      n,
      (r) => ({ k: Number(r.id_ms), id: String(r.id_seq) }),
      (r) => toEventSummary(r, q.expand.event ? undefined : this.config.summaryTruncateBytes, q.expand.summary),
      (c) => `${c.k}-${c.id}`,
    );
  }

  /**
   * Lists only the newest EVENT_RETENTION summaries of the class: the delivery app trims older ones
   * within moments (trims are gathered), and a list never shows them meanwhile.
   */
  private async keepRetained(tx: EntityManager, emitterId: string, channelClass: string, where: string[], params: unknown[]): Promise<void> {
    const [cut] = (await tx.execute(
      `select id_ms, id_seq from event_summaries where emitter_id = ? and channel_class = ?
        order by id_ms desc, id_seq desc offset ? limit 1`,
      [emitterId, channelClass, this.config.eventRetention - 1],
    )) as { id_ms: string; id_seq: number }[];
    if (!cut) return;
    where.push('(id_ms, id_seq) >= (?, ?)');
    params.push(cut.id_ms, cut.id_seq);
  }

  /**
   * Validates the range and queues the deletion in the account's lane (DeletionLanes): there it asks the delivery
   * app to delete the summaries (deleting here when no delivery replica answers), then erases the events from
   * EMITS, which a resumed event stream replays. 429 when the account has DELETIONS_WAITING_PER_ACCOUNT waiting.
   */
  async requestDelete(source: Pick<Source, 'id' | 'ownerId'>, startId?: string, endId?: string, given: 'query' | 'body' = 'query'): Promise<void> {
    const start = startId !== undefined ? parseEventId(startId) : undefined;
    const end = endId !== undefined ? parseEventId(endId) : undefined;
    if (startId !== undefined && !start) throw new BadRequestError('start_id must be an event id like 1700000000000-0', { field: 'start_id' });
    if (endId !== undefined && !end) throw new BadRequestError('end_id must be an event id like 1700000000000-0', { field: 'end_id' });
    if (start && end && (start.ms > end.ms || (start.ms === end.ms && start.seq > end.seq))) {
      throw new BadRequestError('start_id must not be after end_id', { in: given, fields: ['start_id', 'end_id'], start_id: startId, end_id: endId });
    }
    // Events emitted after the request are not the ones it deletes: EMITS is erased up to its end as of now.
    const lastSeq = (await this.nats.jsm.streams.info(this.nats.names.emitsStream)).state.last_seq;
    const deletion: Deletion = { emitterId: source.id, ...(startId ? { startId } : {}), ...(endId ? { endId } : {}), lastSeq };
    if (!this.deletions.offer(source.ownerId, deletion)) {
      throw new RateLimitedError(`${DELETIONS_WAITING_PER_ACCOUNT} deletions of events of this account are waiting; try again shortly`, DELETION_RETRY_AFTER_SECONDS);
    }
  }

  private async performDelete(d: Deletion): Promise<void> {
    const { lastSeq, ...msg } = d;
    await this.nats.nc.request(this.nats.names.deleteEvents, encodeJson(msg), { timeout: 5_000 }).then(
      (reply) => {
        if (!decodeJson<{ ok: boolean }>(reply.data).ok) return this.deleteHere(msg);
      },
      () => this.deleteHere(msg),
    ).catch((e: Error) => this.logger.error(`deleting events of ${d.emitterId} failed: ${e.message}`));
    const [start, end] = [d.startId, d.endId].map((id) => (id === undefined ? undefined : parseEventId(id)));
    await this.emits.erase(d.emitterId, lastSeq, start, end).catch((e: Error) => this.logger.error(`erasing events of ${d.emitterId} from the emits stream failed: ${e.message}`));
  }

  /** As the delivery app would: the source's classes trimmed to EVENT_RETENTION first, then the range deleted. */
  private async deleteHere(msg: DeleteEventsMessage): Promise<void> {
    await deleteEventRecords(this.em, this.config.eventRetention, msg.emitterId, msg.startId, msg.endId);
  }

}
