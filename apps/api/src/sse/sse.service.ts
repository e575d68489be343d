import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { FastifyReply } from 'fastify';
import { Consumer, ConsumerMessages, DeliverPolicy, JsMsg, OrderedConsumerOptions } from 'nats';
import { APP_CONFIG, AppConfig } from '@app/config';
import { BadRequestError, EmittedEvent, parseEventId, RateLimitedError, readEmits } from '@app/contracts';
import { bytesFetch, fetchedMessages, fetchesThrough, NatsService, retryUnanswered } from '@app/nats';
import { parseExpand, summaryOfEmit } from '../events/event-summary.dto';
import { fieldFilter } from '../common/field-filter.interceptor';
import { SSE_RESPONSE_HEADERS } from '../common/response-headers';
import { AccessChangeListener } from '../auth/access-change-listener';
import { onReplicaChange } from '../common/replica-changes';

export type StreamKind = 'emits' | 'observations';

/** What a stream writes as each event's `data:`. */
export type EventView = (e: EmittedEvent) => unknown;

/** An event's summary as a stream's query asks for it: `expand=summary`, and the common `include` / `exclude`. */
export function eventView(query: Record<string, unknown>): EventView {
  const { summary } = parseExpand(query.expand);
  const pick = fieldFilter(query);
  return (e) => pick(summaryOfEmit(e, summary));
}

/** Where a stream resumes: after the event of `Last-Event-ID`. */
export type ResumePoint = { ms: number; seq: number };

/** The resume point of a `Last-Event-ID` header (none without one); a malformed one is the client's error (400). */
export function resumePoint(lastId: string | undefined): ResumePoint | undefined {
  if (!lastId) return undefined;
  const after = parseEventId(lastId);
  if (!after) throw new BadRequestError('Last-Event-ID must be an event id like 1700000000000-0', { header: 'last-event-id' });
  return after;
}

/** An open stream held by `SseService.hold`. */
export interface HeldStream {
  closed: () => boolean;
  /** The access check in progress, if any: write nothing until it answers true. */
  gate: () => Promise<boolean> | undefined;
  close: () => void;
}

/** Replay starts this much before the resume id's time, so clock skew between emitters cannot skip events. */
const REPLAY_SLACK_MS = 5_000;
/** How long one fetch waits for events before the next is asked for. */
const BATCH_WAIT_MS = 5_000;

/**
 * A HEAD request to a stream gets the stream's head and ends: Node never sends the head of a HEAD answer
 * before `end()` (its writes are dropped), so streaming would hold the request, and its consumer, forever.
 * Returns whether it answered.
 */
export function answeredHead(reply: FastifyReply): boolean {
  if (reply.request.method !== 'HEAD') return false;
  reply.hijack();
  reply.raw.writeHead(200, SSE_RESPONSE_HEADERS);
  reply.raw.end();
  return true;
}

/**
 * A stream's opening requests to JetStream are made at most this many times while NATS does not answer them:
 * on a loaded server a stream info can miss the client's timeout once. The last try's error answers (503).
 */
const OPEN_TRIES = 3;

const belongs = (kind: StreamKind, name: string): boolean => (kind === 'observations') === (name === '$logs' || name === '$errors');

/**
 * Writes one unnamed SSE message per event (`id:` = event id, `data:` = the
 * event summary JSON) from an ordered JetStream consumer on the source's emit
 * subject; with a resume point it replays the stream from there first. Access
 * is checked again at every keep-alive (`SSE_KEEPALIVE_MS`): a stream whose key
 * was revoked or whose caller left the source's org ends.
 */
@Injectable()
export class SseService implements OnModuleInit, OnModuleDestroy, BeforeApplicationShutdown {
  private readonly logger = new Logger('SseService');
  private readonly open = new Set<() => void>();
  /** Each open stream's check of its access now (on an access change). */
  private readonly rechecks = new Set<() => void>();
  /** Streams open (or opening) per holder of an API key. */
  private readonly perHolder = new Map<string, number>();
  /** The open streams of each source or workflow, ended when it is deleted (on any api replica). */
  private readonly bySource = new Map<string, Set<() => void>>();
  private unsubscribe?: () => void;

  constructor(
    private readonly nats: NatsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    access: AccessChangeListener,
  ) {
    access.onChange(() => this.rechecks.forEach((recheck) => recheck()));
  }

  onModuleInit(): void {
    this.unsubscribe = onReplicaChange(this.nats, 'deleted', (id) => this.bySource.get(id)?.forEach((close) => close()));
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
  }

  /** Ends every open stream before the HTTP server closes, which would otherwise wait on them forever. */
  beforeApplicationShutdown(): void {
    for (const close of [...this.open]) close();
  }

  /**
   * Counts a stream of `holder` (the user whose key opened it), or refuses it (429) when they have
   * SSE_MAX_STREAMS_PER_KEY open: a stream is not a request (API_MAX_CONCURRENT_PER_KEY does not
   * count it) and holds a socket of the api, an ordered JetStream consumer on the NATS server and a
   * Postgres query every SSE_KEEPALIVE_MS for as long as it stays open — one key opened thousands.
   * Returns the release (idempotent).
   */
  admit(holder: string): () => void {
    const max = this.config.sseMaxStreamsPerKey;
    const n = this.perHolder.get(holder) ?? 0;
    if (max > 0 && n >= max) {
      throw new RateLimitedError(`too many event streams open with this API key: at most ${max} at once (SSE_MAX_STREAMS_PER_KEY); close one, or retry after 5 s`, 5);
    }
    this.perHolder.set(holder, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.perHolder.get(holder) ?? 1) - 1;
      if (left > 0) this.perHolder.set(holder, left);
      else this.perHolder.delete(holder);
    };
  }

  async stream(reply: FastifyReply, sourceId: string, kind: StreamKind, after: ResumePoint | undefined, view: EventView, stillAllowed: () => Promise<boolean>, holder = ''): Promise<void> {
    if (answeredHead(reply)) return;
    const release = this.admit(holder);
    let handedOver = false;
    try {
      await this.openStream(reply, sourceId, kind, after, view, stillAllowed, release);
      handedOver = true;
    } finally {
      if (!handedOver) release();
    }
  }

  private async openStream(reply: FastifyReply, sourceId: string, kind: StreamKind, after: ResumePoint | undefined, view: EventView, stillAllowed: () => Promise<boolean>, release: () => void): Promise<void> {
    await this.nats.ensureConnected();
    // A new stream shows every event stored after its handshake. The ordered consumer is made on the first fetch,
    // after the handshake is written, so "new" would be counted from then: it starts after the stream's last sequence
    // as it stands now (`stored`) instead. A resumed one replays what was stored by then from the resume id's time,
    // skipping the events up to that id, and shows every event stored later, whatever its id: an id past the stream's
    // end (a far-future time, up to 999999999999999-999999999) starts it at the end, as a new stream.
    const consumerFrom = (start: Partial<OrderedConsumerOptions>): Promise<Consumer> =>
      retryUnanswered('opening a stream', () => this.nats.js.consumers.get(this.nats.names.emitsStream, { filterSubjects: this.nats.names.emit(sourceId), ...start }), { attempts: OPEN_TRIES, rethrow: true });
    const startAfter = (seq: number): Partial<OrderedConsumerOptions> => ({ deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: seq + 1 });
    const stored = (await retryUnanswered('opening a stream', () => this.nats.jsm.streams.info(this.nats.names.emitsStream), { attempts: OPEN_TRIES, rethrow: true })).state.last_seq;
    const from = after ? after.ms - REPLAY_SLACK_MS : Infinity;
    const replays = from <= Date.now() && stored > 0;
    let consumer = await consumerFrom(replays ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(Math.max(0, from)).toISOString() } : startAfter(stored));
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, SSE_RESPONSE_HEADERS);
    res.write(':sse-handshake\n\n');
    /** The live fetch being written (one at a time: the next is fetched once the client has read this one). */
    let live: ConsumerMessages | undefined;
    /** The fetch (or replay step) asked for and not answered yet: the ordered consumer is made on the server by it. */
    let fetching: Promise<unknown> | undefined;
    const fetched = <T>(p: Promise<T>): Promise<T> => (fetching = p);
    // Its consumer goes with it: left on the server for its 5 minutes of inactivity, a client opening and closing
    // streams in a loop piled up consumers on EMITS, which the server matches every stored message against. A
    // consumer still being made is not known to the client yet (deleting it now deletes nothing): it is deleted once
    // the fetch making it has answered.
    const held = this.hold(res, sourceId, stillAllowed, release, () => {
      void Promise.resolve(fetching)
        .catch(() => undefined)
        .then(() => {
          live?.stop();
          return consumer.delete();
        })
        .catch(() => undefined);
    });
    // After a reconnection the stream ends: the consumer may be gone with a restarted server (fetches would wait on
    // it for ever), and the client resumes with Last-Event-ID on a new one.
    const reconnects = this.nats.reconnects;
    // What the stream takes from JetStream at a time: one fetch bounded by bytes (`bytesFetch`: BATCH_BYTES, or one
    // message at the largest), each message written as it arrives, the next fetch only once the client has read this
    // one. A reader that does not read so holds at most one batch of the api's memory, and never makes the api's NATS
    // connection fall behind (the server cuts a connection whose unread messages pass 64 MiB, and every stream and
    // request on it with it). `consume()` pulls on whatever the reader does. A fetch ends once it has brought the 100
    // messages the client asks for (`fetchedMessages`): it would otherwise wait out its expiry whenever they held less
    // than its bytes, so a burst reached a stream 100 events every 5 s. (It was counted in messages before, 2 a fetch at
    // NATS's default max_payload of 1 MiB: 2,500 fetches for a burst of 5,000 small events.)
    // The replay (what was stored before the stream opened, up to `stored`) is read by bytes too (`fetchesThrough`),
    // each fetch also ending with the last message stored, so it waits out no expiry; each is read whole (BATCH_BYTES
    // at most) before it is written, the next once the client has read it, as a live batch; the last may also hold
    // messages stored since.
    // The stream then goes on live on a consumer of its own, from after the last message the replay brought: the
    // replay's last fetch, ended before its expiry, may still be open on the server, which would send it the next
    // messages (lost to the stream until a later one showed the gap); deleting the replay's consumer ends it.
    let replay = replays ? fetchesThrough(consumer, stored, this.nats.maxPayload) : undefined;
    let replayed = stored;
    const batches = async (): Promise<Iterable<JsMsg> | AsyncIterable<JsMsg> | undefined> => {
      if (held.closed() || this.nats.reconnects !== reconnects) return undefined;
      if (replay) {
        const next = await fetched(replay.next());
        if (!next.done) {
          replayed = Math.max(replayed, next.value[next.value.length - 1].seq);
          return next.value;
        }
        replay = undefined;
        await consumer.delete().catch(() => undefined);
        consumer = await consumerFrom(startAfter(replayed));
        // Closed meanwhile: the new consumer would be left behind (the close deleted the replay's).
        if (held.closed()) return void (await consumer.delete().catch(() => undefined));
      }
      const opts = bytesFetch(this.nats.maxPayload, BATCH_WAIT_MS);
      live = await fetched(consumer.fetch(opts));
      return fetchedMessages(live, opts);
    };
    void this.pump(batches, res, sourceId, kind, after && { after, stored }, view, held.closed, held.gate).finally(held.close);
  }

  /**
   * Holds an open stream of `streamId` (a source or a workflow; its handshake written, `release` from `admit`):
   * at once, on an access change (a key rotated, a membership ended) and at every keep-alive its caller's access is checked
   * again (`stillAllowed`), and no event may be written until the check answers (`gate`); a denied check, the
   * source's or workflow's deletion (on any api replica), the api's shutdown or the client's going ends it (`stop`
   * ends what feeds it).
   */
  hold(res: FastifyReply['raw'], streamId: string, stillAllowed: () => Promise<boolean>, release: () => void, stop: () => void): HeldStream {
    let closed = false;
    let gate: Promise<boolean> | undefined;
    const recheck = (): void => {
      const current: Promise<boolean> = stillAllowed().then((ok) => {
        if (!ok) close();
        if (gate === current) gate = undefined;
        return ok;
      });
      gate = current;
    };
    // Each keep-alive first checks that the caller may still read the stream (key not revoked, still a member).
    const timer = setInterval(() => {
      recheck();
      void gate?.then((ok) => ok && !closed && res.write(':sse-handshake\n\n'));
    }, this.config.sseKeepaliveMs);
    const close = (): void => {
      if (closed) return;
      closed = true;
      release();
      clearInterval(timer);
      stop();
      this.open.delete(close);
      this.rechecks.delete(recheck);
      const ofSource = this.bySource.get(streamId);
      ofSource?.delete(close);
      if (!ofSource?.size) this.bySource.delete(streamId);
      res.end();
    };
    this.open.add(close);
    this.rechecks.add(recheck);
    this.bySource.set(streamId, (this.bySource.get(streamId) ?? new Set()).add(close));
    res.on('close', close);
    // A client that left while the stream was being opened closed its socket before that listener was added: its
    // close never comes again, and the stream (its place in SSE_MAX_STREAMS_PER_KEY, keep-alive and consumer) would
    // be held for the api's lifetime. Otherwise checked once now: an access change (or the deletion) announced after
    // the request was authenticated and before the stream was held here found no stream to end. No event is
    // written until this answers.
    if (res.destroyed) close();
    else recheck();
    return { closed: () => closed, gate: () => gate, close };
  }

  private async pump(
    nextBatch: () => Promise<Iterable<JsMsg> | AsyncIterable<JsMsg> | undefined>,
    res: FastifyReply['raw'],
    sourceId: string,
    kind: StreamKind,
    resume: { after: ResumePoint; stored: number } | undefined,
    view: EventView,
    isClosed: () => boolean,
    accessCheck: () => Promise<boolean> | undefined,
  ): Promise<void> {
    const write = (m: JsMsg): void => {
      // Only a replayed message (stored before the stream opened) may hold events the client has seen.
      const after = resume && m.seq <= resume.stored ? resume.after : undefined;
      // One message may hold the events of several invocations (an EmitBatch): each is written, in order.
      for (const e of readEmits(m.data) ?? []) {
        if (!e || !belongs(kind, e.name ?? '')) continue;
        const id = parseEventId(e.id);
        if (after && id && (id.ms < after.ms || (id.ms === after.ms && id.seq <= after.seq))) continue;
        res.write(`id: ${e.id}\ndata: ${JSON.stringify(view(e))}\n\n`);
      }
    };
    // A message read while an access check is in flight is written once that check has passed (a denied one ends the
    // stream), after those read before it. Waiting for the check inside the batch's iteration lost the batch's other
    // messages when its fetch completed meanwhile: an event was dropped whenever a keep-alive check took longer than
    // the next event took to come.
    let written: Promise<boolean> = Promise.resolve(true);
    let waiting = 0;
    try {
      for (let batch = await nextBatch(); batch && !isClosed(); batch = await nextBatch()) {
        for await (const m of batch) {
          if (isClosed()) return;
          const pending = accessCheck();
          if (!pending && !waiting) {
            write(m);
            continue;
          }
          waiting++;
          written = written.then(async (ok) => ok && (await (pending ?? true))).then((ok) => {
            waiting--;
            if (ok && !isClosed()) write(m);
            return ok;
          });
        }
        // No next batch while this one's messages wait for a check.
        if (!(await written)) return;
        // The next batch once the client has read this one. Not waited for inside the batch: a fetch that expires
        // while its messages wait unread drops them (the ordered consumer does not ask for them again).
        if (res.writableNeedDrain) {
          await new Promise<void>((r) => {
            const done = (): void => {
              res.off('drain', done);
              res.off('close', done);
              r();
            };
            res.on('drain', done);
            res.on('close', done);
          });
        }
      }
    } catch (err) {
      this.logger.warn(`event stream of ${sourceId} ended: ${(err as Error).message}`);
    }
  }
}
