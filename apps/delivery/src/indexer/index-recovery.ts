import { EntityManager } from '@mikro-orm/postgresql';
import { DeliverPolicy } from 'nats';
import type { Logger } from '@app/config';
import { EmittedEvent, readEmits, ROUTER_DURABLE } from '@app/contracts';
import { boundedFetches, NatsService } from '@app/nats';

/** How often Postgres's start time and the router's acknowledgement floor on EMITS are read. */
const CHECK_MS = 1_000;
/**
 * How much further back than the WAL writer's longest delay the re-index reaches: the checks' own spacing,
 * a slow read, clocks. Re-indexing more than was lost costs only the reads (the inserts are idempotent).
 */
const SLACK_MS = 10_000;
/** Floors remembered: two minutes of checks. */
const FLOORS_MAX = 120;

/**
 * With INDEX_ASYNC_COMMIT, an index batch's commit does not wait for its WAL flush, so a Postgres crash (or
 * a failover) can lose the summaries committed in its last moments — at most three times `wal_writer_delay`
 * — whose events may already have been routed. EMITS still holds them: this reads Postgres's start time and
 * the router's acknowledgement floor every second, and when the start time changes it indexes again every
 * event of EMITS past the floor read before the last check that saw Postgres up, minus that delay and a
 * slack (an event is indexed before the router acknowledges it, so every summary committed after that check
 * belongs to a later sequence). The inserts are idempotent; events erased by `DELETE /sources/{id}/events`
 * are gone from EMITS too, so none comes back.
 */
export class IndexRecovery {
  private timer?: NodeJS.Timeout;
  private startedAtMs?: number;
  private walWriterDelayMs = 200;
  /** When a check last saw Postgres up. */
  private lastUpMs = 0;
  private readonly floors: { atMs: number; seq: number }[] = [];
  /** The sequence after which EMITS is still to be indexed again (a re-index failed or is due). */
  private owedAfter?: number;
  private busy = false;
  private stopping = false;

  constructor(
    private readonly nats: NatsService,
    private readonly em: EntityManager,
    private readonly logger: Logger,
    private readonly reindex: (events: EmittedEvent[]) => Promise<void>,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.check(), CHECK_MS);
    this.timer.unref();
    void this.check();
  }

  /** Waits for a check in progress; a re-index in progress stops after its current batch. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    while (this.busy) await new Promise((r) => setTimeout(r, 50));
  }

  private async check(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const atMs = Date.now();
      const floor = await this.readFloor();
      const up = await this.readPostgres().catch(() => undefined);
      // Down or unreachable: the next check that reaches it compares start times. No floor is kept meanwhile: the
      // router may still acknowledge events routed before the crash, past summaries the crash lost.
      if (!up) return;
      if (this.startedAtMs !== undefined && up.startedAtMs !== this.startedAtMs) {
        const from = this.floorAt(this.lastUpMs - 3 * this.walWriterDelayMs - SLACK_MS);
        this.owedAfter = Math.min(this.owedAfter ?? from, from);
        this.logger.warn({ restarted_at: new Date(up.startedAtMs).toISOString(), from_seq: from + 1 }, 'Postgres restarted: indexing the events of EMITS since before it stopped again');
      }
      this.startedAtMs = up.startedAtMs;
      this.walWriterDelayMs = up.walWriterDelayMs;
      this.lastUpMs = atMs;
      if (floor !== undefined) {
        this.floors.push({ atMs, seq: floor });
        if (this.floors.length > FLOORS_MAX) this.floors.shift();
      }
      if (this.owedAfter !== undefined) await this.replay(this.owedAfter);
    } finally {
      this.busy = false;
    }
  }

  /** The router's acknowledgement floor; undefined when NATS is unreachable or the router's consumer not made yet. */
  private async readFloor(): Promise<number | undefined> {
    try {
      return (await this.nats.jsm.consumers.info(this.nats.names.emitsStream, ROUTER_DURABLE)).ack_floor.stream_seq;
    } catch {
      return undefined;
    }
  }

  private async readPostgres(): Promise<{ startedAtMs: number; walWriterDelayMs: number }> {
    const [row] = (await this.em.getConnection().execute(
      `select (extract(epoch from pg_postmaster_start_time()) * 1000)::bigint as started, (select setting::int from pg_settings where name = 'wal_writer_delay') as wwd`,
    )) as { started: string | number; wwd: number }[];
    return { startedAtMs: Number(row.started), walWriterDelayMs: Number(row.wwd) || 200 };
  }

  /** The floor read at or before `atMs`; the oldest one kept when none is that old (a process younger than the window). */
  private floorAt(atMs: number): number {
    let found = this.floors[0]?.seq ?? 0;
    for (const f of this.floors) {
      if (f.atMs > atMs) break;
      found = f.seq;
    }
    return found;
  }

  /** Indexes every event of EMITS after `afterSeq`, up to the stream's end as of now; kept owed when it fails. */
  private async replay(afterSeq: number): Promise<void> {
    const stream = this.nats.names.emitsStream;
    try {
      const lastSeq = (await this.nats.jsm.streams.info(stream)).state.last_seq;
      let indexed = 0;
      if (lastSeq > afterSeq) {
        const consumer = await this.nats.js.consumers.get(stream, { filterSubjects: this.nats.names.allEmits, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: afterSeq + 1 });
        // A fetch at a time, bounded by bytes (500 messages at a time were up to 500 MB of delivery's memory).
        for await (const messages of boundedFetches(consumer, lastSeq, this.nats.maxPayload)) {
          // Also a range delete's copy (`Ess-Routed`), which the router skips: its events are real ones. Not JSON: the
          // router drops it too.
          const events = messages.flatMap((m) => readEmits(m.data) ?? []);
          if (events.length) await this.reindex(events);
          indexed += events.length;
          if (this.stopping) break;
        }
        await consumer.delete().catch(() => undefined);
      }
      if (this.stopping) return;
      this.owedAfter = undefined;
      this.logger.info({ from_seq: afterSeq + 1, to_seq: lastSeq, events: indexed }, 'events of EMITS indexed again after Postgres restarted');
    } catch (e) {
      this.logger.warn({ err: (e as Error).message, from_seq: afterSeq + 1 }, 'indexing EMITS again failed; retrying');
    }
  }
}
