import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { JsMsg, Subscription } from 'nats';
import { APP_CONFIG, AppConfig, Logger } from '@app/config';
import { channelClassOf, decodeJson, DeleteEventsMessage, EmittedEvent, encodeJson, readEmits } from '@app/contracts';
import { TrimGroup } from '@app/db';
import { NatsService, retryUnanswered } from '@app/nats';
import { BatchConsumer } from '../common/durable-consumer';
import { DeliveryMetrics } from '../common/metrics';
import { LOGGER } from '../common/tokens';
import { SummaryWriter } from './summary-writer';
import { IndexRecovery } from './index-recovery';

/** The consumer earlier versions indexed with; drained and removed by this one (see `drainLegacyConsumer`). */
const LEGACY_DURABLE = 'indexer';
const LEGACY_CHECK_MS = 10_000;
/**
 * Trims run at most this often: the groups due meanwhile are trimmed together. Trimming after
 * every batch (a statement per group, each reading the group's newest EVENT_RETENTION rows to find
 * its cut) cost Postgres more than the inserts at moderate rates.
 */
const TRIM_INTERVAL_MS = 50;
/**
 * A group is trimmed this long after the first insert it got since its last trim, so one trim covers
 * all the summaries a busy source wrote meanwhile: each trim is a statement planned on its own and a
 * read of the group's newest EVENT_RETENTION index entries, which with many busy sources every 50 ms
 * cost Postgres more per event than with one (20 sources: 400 trims/s). An emitter may hold more
 * summaries than EVENT_RETENTION for this long; the api lists only the newest EVENT_RETENTION.
 */
const TRIM_GROUP_DELAY_MS = 1000;

/**
 * Indexes emitted events (also `$errors` and `$logs`) into `event_summaries`,
 * keeping the last EVENT_RETENTION per emitter and channel class — called by the
 * router for each batch it consumes from EMITS, before it routes the batch, so an
 * event is indexed before any listener gets it and EMITS is consumed once — and
 * serves `ctl.delete-events`.
 */
@Injectable()
export class IndexerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private deleteSub?: Subscription;
  private legacy?: BatchConsumer;
  private legacyCheck?: NodeJS.Timeout;
  /** Groups touched since their last trim, with when each is due (insertion order = due order); trims run one at a time, off the routing path. */
  private readonly toTrim = new Map<string, { group: TrimGroup; dueMs: number }>();
  private trimming?: Promise<void>;
  private closing = false;
  /** With INDEX_ASYNC_COMMIT: indexes EMITS again after Postgres restarted (its last commits may be lost). */
  private recovery?: IndexRecovery;

  constructor(
    private readonly nats: NatsService,
    private readonly em: EntityManager,
    private readonly metrics: DeliveryMetrics,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const names = this.nats.names;
    this.deleteSub = this.nats.nc.subscribe(names.deleteEvents, { queue: 'delivery', callback: (err, msg) => {
      if (err) return;
      void this.deleteEvents(decodeJson<DeleteEventsMessage>(msg.data)).then(
        (deleted) => msg.respond(encodeJson({ ok: true, deleted })),
        (e: Error) => {
          this.logger.error({ err: e.message }, 'delete-events failed');
          msg.respond(encodeJson({ ok: false, error: e.message }));
        },
      );
    } });
    await this.drainLegacyConsumer();
    if (this.config.indexAsyncCommit) {
      this.recovery = new IndexRecovery(this.nats, this.em, this.logger, (events) => this.reindex(events));
      this.recovery.start();
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.deleteSub?.unsubscribe();
    clearInterval(this.legacyCheck);
    await this.legacy?.stop();
    await this.recovery?.stop();
    this.closing = true;
    await this.trimming;
  }

  /**
   * Writes the summaries of a batch (multi-row, idempotent) and resolves once
   * they are committed. Returns the events that cannot be indexed (a malformed
   * id, a field over 255 characters): the caller drops them. Trimming to EVENT_RETENTION follows in the
   * background (coalesced across batches), so routing never waits for it.
   */
  async index(events: EmittedEvent[]): Promise<Set<EmittedEvent>> {
    const rejected = await this.write(events, this.config.indexAsyncCommit);
    this.metrics.indexBatch.observe(events.length);
    for (const e of events) {
      if (rejected.has(e)) this.logger.warn({ emitter_id: e?.emitterId, id: e?.id }, 'dropping an event that cannot be indexed (a malformed id, or a field over 255 characters)');
      else this.metrics.eventsIndexed.inc({ channel_class: channelClassOf(e.name ?? '') });
    }
    return rejected;
  }

  /** Writes summaries (trimmed in the background); returns the events that cannot be indexed. */
  private async write(events: EmittedEvent[], asyncCommit: boolean): Promise<Set<EmittedEvent>> {
    const written = await new SummaryWriter(this.em.fork(), this.config.eventRetention, asyncCommit).write(events);
    const dueMs = Date.now() + TRIM_GROUP_DELAY_MS;
    for (const g of written.touched) this.keepForTrim(g, dueMs);
    this.trimming ??= this.trimLoop();
    return new Set(written.rejected);
  }

  /** Indexes events of EMITS again after Postgres restarted (each insert waits for its flush: these were lost once). */
  private async reindex(events: EmittedEvent[]): Promise<void> {
    const rejected = await this.write(events, false);
    this.metrics.eventsReindexed.inc(events.length - rejected.size);
  }

  /** A group already waiting keeps its due time (and its place): a busy group is trimmed once per TRIM_GROUP_DELAY_MS. */
  private keepForTrim(g: TrimGroup, dueMs: number): void {
    const key = `${g.e}\u0000${g.c}`;
    if (!this.toTrim.has(key)) this.toTrim.set(key, { group: g, dueMs });
  }

  private async trimLoop(): Promise<void> {
    try {
      while (this.toTrim.size) {
        if (!this.closing) {
          const first = this.toTrim.values().next().value!;
          await new Promise((r) => setTimeout(r, Math.max(TRIM_INTERVAL_MS, first.dueMs - Date.now())));
        }
        // Closing: everything touched is trimmed now, not left to the next batch after a restart.
        const now = this.closing ? Infinity : Date.now();
        const due: TrimGroup[] = [];
        for (const [key, t] of this.toTrim) {
          if (t.dueMs > now) break;
          due.push(t.group);
          this.toTrim.delete(key);
        }
        if (!due.length) continue;
        await new SummaryWriter(this.em.fork(), this.config.eventRetention).trim(due).catch((e: Error) => {
          // Kept for the next round: retention is enforced late, never skipped (the next batch that touches a group trims it after a restart).
          if (!this.closing) for (const g of due) this.keepForTrim(g, Date.now() + TRIM_GROUP_DELAY_MS);
          this.logger.warn({ err: e.message, groups: due.length }, 'trimming event summaries failed; retrying');
          return new Promise((r) => setTimeout(r, 1000));
        });
      }
    } finally {
      this.trimming = undefined;
    }
  }

  async deleteEvents(req: DeleteEventsMessage): Promise<number> {
    const deleted = await new SummaryWriter(this.em.fork(), this.config.eventRetention).deleteRange(req.emitterId, req.startId, req.endId);
    this.metrics.deleteRequests.inc();
    this.logger.info({ source_id: req.emitterId, start_id: req.startId, end_id: req.endId, deleted }, 'events deleted');
    return deleted;
  }

  /**
   * Earlier versions indexed through a consumer of their own ("indexer"). When
   * it still exists, its backlog (events the router may have passed before this
   * version) is indexed here until nothing is pending, then it is deleted.
   */
  private async drainLegacyConsumer(): Promise<void> {
    const stream = this.nats.names.emitsStream;
    const pending = async (): Promise<number | undefined> => {
      try {
        const info = await retryUnanswered(`reading consumer ${LEGACY_DURABLE}`, () => this.nats.jsm.consumers.info(stream, LEGACY_DURABLE));
        return info.num_pending + info.num_ack_pending;
      } catch (e) {
        if (/consumer not found/i.test((e as Error).message)) return undefined;
        throw e;
      }
    };
    if ((await pending()) === undefined) return;
    this.logger.info({ durable: LEGACY_DURABLE }, 'indexing the backlog of the previous indexer consumer, then removing it');
    this.legacy = new BatchConsumer(this.nats.js, stream, LEGACY_DURABLE, (batch) => this.indexLegacy(batch), { maxBatch: 500, lingerMs: 5 }, this.logger, this.config.deliveryAckWaitMs);
    await this.legacy.start();
    this.legacyCheck = setInterval(() => {
      void pending().then(
        async (n) => {
          if (n === undefined || n > 0 || !this.legacy) return;
          clearInterval(this.legacyCheck);
          const legacy = this.legacy;
          this.legacy = undefined;
          await legacy.stop();
          await this.nats.jsm.consumers.delete(stream, LEGACY_DURABLE).catch(() => undefined);
          this.logger.info({ durable: LEGACY_DURABLE }, 'the previous indexer consumer caught up and was removed');
        },
        (e: Error) => this.logger.warn({ err: e.message }, 'checking the previous indexer consumer failed'),
      );
    }, LEGACY_CHECK_MS);
    this.legacyCheck.unref();
  }

  /** Every event of each message is indexed; a message none of whose events can be is dropped. */
  private async indexLegacy(batch: JsMsg[]): Promise<void> {
    const emits: { m: JsMsg; events: EmittedEvent[] }[] = [];
    for (const m of batch) {
      const events = readEmits(m.data);
      if (events) emits.push({ m, events });
      else m.term(); // not JSON
    }
    const rejected = await this.index(emits.flatMap((e) => e.events));
    for (const { m, events } of emits) {
      if (events.every((e) => rejected.has(e))) m.term(); // malformed event ids
      else m.ack();
    }
  }
}
