import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { ApiError, readEmits, ROUTER_DURABLE } from '@app/contracts';
import { WaitingRetries } from '@app/db';
import { NatsService, subjectCounts } from '@app/nats';
import type { ConsumerInfo } from 'nats';
import type { EndpointTarget } from './endpoint-lookup';
import { IngestBatches } from './ingest-batches';

/** Why an HTTP request is refused with 429: whose backlog is full, how full, and when to come back. */
export interface BacklogRefusal {
  scope: 'source' | 'account' | 'system';
  /** What waits: invocations to run, or (scope `account`) events of the account to route, deliveries to its webhooks or their retries. */
  waiting: 'invocations' | 'events' | 'deliveries' | 'retries';
  pending: number;
  limit: number;
  retryAfterSeconds: number;
}

/** How many requests were refused for one scope and kind of backlog. */
export interface IngestRefusals {
  scope: BacklogRefusal['scope'];
  waiting: BacklogRefusal['waiting'];
  count: number;
}

export interface IngestStats {
  invocations_pending: number;
  events_unrouted: number;
  deliveries_pending: number;
  retries_pending: number;
  max_pending: number;
  max_pending_per_source: number;
  max_pending_per_account: number;
  max_pending_deliveries_per_account: number;
  max_retries_per_account: number;
  refused_total: number;
}

/** A refusal as the 429 `backlog_full` body gives it: the message and the details. */
export function describeRefusal(full: BacklogRefusal): { error: string; details: Record<string, unknown> } {
  const waiting =
    full.scope === 'source'
      ? `this source has ${full.pending} invocations waiting to run`
      : full.scope === 'account'
        ? full.waiting === 'deliveries'
          ? `this account's webhooks have ${full.pending} deliveries waiting to be sent`
          : full.waiting === 'retries'
            ? `this account's webhooks have ${full.pending} deliveries waiting to be retried`
            : full.waiting === 'events'
            ? `this account's sources have ${full.pending} emitted events waiting to be routed`
            : `this account's sources have ${full.pending} invocations waiting to run`
        : `the service has ${full.pending} invocations waiting to run`;
  return {
    error: `${waiting} (limit ${full.limit}): retry after ${full.retryAfterSeconds} s`,
    details: { scope: full.scope, pending: full.pending, limit: full.limit, retry_after_seconds: full.retryAfterSeconds },
  };
}

const RETRY_AFTER_MAX_SECONDS = 30;
/** Owners remembered per kind (a webhook's, source's or workflow's owner never changes); past this many the memory starts over. */
const OWNERS_CACHED_MAX = 100_000;
/** Ids per owner look-up query. */
const OWNER_QUERY_IDS = 1000;

/** EMITS messages read, evenly over the router's backlog, to tell how many events it holds and whose they are. */
const UNROUTED_SAMPLES = 32;

/** One EMITS message of the router's backlog: whose it is (its subject) and how many events it holds. */
interface UnroutedSample {
  subject: string;
  events: number;
}

/**
 * Back-pressure for HTTP ingress: how many invocations wait in INVOCATIONS
 * (a work queue: stored and not yet acknowledged by a runner; a message holding
 * several requests counts as the requests this replica's recent messages to its
 * source held), per source, per
 * account and in all, and how many emitted events wait for the delivery app (the
 * router's unacknowledged messages, each counted as the events a sample of them
 * holds on average: one message may hold several invocations' events), read
 * every INGEST_BACKLOG_POLL_MS. A request to a source whose invocations reach
 * INGEST_MAX_PENDING_PER_SOURCE, whose account's reach INGEST_MAX_PENDING_PER_ACCOUNT,
 * or while invocations and unrouted events together reach INGEST_MAX_PENDING, is
 * refused (429 with Retry-After) instead of queueing behind minutes of work. An
 * account's invocations count in that total up to its own bound only: runs that
 * never end, in sources enough to pass every per-source bound, hold back their
 * own account, not the service. So do its unrouted events: whose they are is
 * estimated from the same sample, each message weighed by its events (once that
 * backlog could hold an account's bound), and an account whose share reaches
 * INGEST_MAX_PENDING is refused alone, so a flood of emits holds back the account
 * that emits it. So is a request to a source whose owner's
 * webhooks have INGEST_MAX_PENDING_DELIVERIES_PER_ACCOUNT deliveries waiting in
 * DELIVERIES (routed, not yet sent: a slow receiver, or more events than the
 * delivery app can send): that backlog holds back its own account only, so a
 * slow webhook of one account never refuses another's requests. So is one to a
 * source whose owner's webhooks have INGEST_MAX_RETRIES_PER_ACCOUNT deliveries
 * waiting in webhook_retries (failing receivers: each retry is a row of the shared
 * Postgres kept up to about a day), counted every WEBHOOK_RETRIES_COUNT_MS. The figures
 * are as of the last read, so a burst may pass a bound by what arrives within
 * one poll interval.
 */
@Injectable()
export class InvocationBacklog implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('InvocationBacklog');
  private timer: NodeJS.Timeout | undefined;
  private total = 0;
  private unrouted = 0;
  private bySource = new Map<string, number>();
  /** Messages per source as last read (bySource is them scaled by the requests per message). */
  private messagesBySource = new Map<string, number>();
  private byAccount = new Map<string, number>();
  /** Unrouted events per owner, estimated from a sample of the router's backlog (empty while it is small). */
  private unroutedByAccount = new Map<string, number>();
  /** The last read's samples of the router's backlog by sequence: a message never changes, so the next read reuses them. */
  private unroutedSamples = new Map<number, UnroutedSample>();
  /** What the service's bound compares: invocations and unrouted events, each account's up to its own bound. */
  private counted = 0;
  private deliveries = 0;
  private deliveriesByOwner = new Map<string, number>();
  /** Deliveries waiting in webhook_retries, in all and per owner of their webhooks (every WEBHOOK_RETRIES_COUNT_MS). */
  private readonly retries: WaitingRetries;
  private readonly webhookOwners = new Map<string, string>();
  private readonly emitterOwners = new Map<string, string>();
  /** Invocations drained per second (all sources), from the last two reads and the requests accepted between them. */
  private drainPerSecond = 0;
  private acceptedSinceRead = 0;
  private lastReadAtMs = 0;
  private reading = false;
  /** Refusals by scope and what waited (keyed `<scope> <waiting>`), for /metrics. */
  private readonly refusedBy = new Map<string, IngestRefusals>();

  constructor(
    private readonly nats: NatsService,
    private readonly batches: IngestBatches,
    private readonly em: EntityManager,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.retries = new WaitingRetries(em, config.ingestMaxRetriesPerAccount, config.webhookRetriesCountMs, (message) => this.logger.warn(message));
  }

  /** Figures for /healthz: the backlog as last read, the bounds, requests refused by this replica. */
  get stats(): IngestStats {
    return {
      invocations_pending: this.total,
      events_unrouted: this.unrouted,
      deliveries_pending: this.deliveries,
      retries_pending: this.retries.total,
      max_pending: this.config.ingestMaxPending,
      max_pending_per_source: this.config.ingestMaxPendingPerSource,
      max_pending_per_account: this.config.ingestMaxPendingPerAccount,
      max_pending_deliveries_per_account: this.config.ingestMaxPendingDeliveriesPerAccount,
      max_retries_per_account: this.config.ingestMaxRetriesPerAccount,
      refused_total: this.refusals.reduce((sum, r) => sum + r.count, 0),
    };
  }

  /** Requests this replica refused, by scope and what waited. */
  get refusals(): IngestRefusals[] {
    return [...this.refusedBy.values()];
  }

  /** Invocations drained per second, as estimated from the last reads (0 before two reads, or while nothing drains). */
  get drainRate(): number {
    return this.drainPerSecond;
  }

  get enabled(): boolean {
    const c = this.config;
    return c.ingestMaxPending > 0 || c.ingestMaxPendingPerSource > 0 || c.ingestMaxPendingPerAccount > 0 || c.ingestMaxPendingDeliveriesPerAccount > 0;
  }

  onModuleInit(): void {
    if (this.config.ingestMaxRetriesPerAccount > 0) this.retries.start();
    if (!this.enabled) return;
    this.timer = setInterval(() => void this.read(), this.config.ingestBacklogPollMs);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
    this.retries.stop();
  }

  /** Undefined when the source may take one more invocation; else why not. */
  check(target: Pick<EndpointTarget, 'sourceId' | 'ownerId'>): BacklogRefusal | undefined {
    const { ingestMaxPending: systemLimit, ingestMaxPendingPerSource: sourceLimit, ingestMaxPendingDeliveriesPerAccount: accountLimit } = this.config;
    const mine = this.bySource.get(target.sourceId) ?? 0;
    if (sourceLimit > 0 && mine >= sourceLimit) return this.refusal('source', 'invocations', mine, sourceLimit);
    const queued = this.checkAccount(target.ownerId);
    if (queued) return queued;
    const owed = this.deliveriesByOwner.get(target.ownerId) ?? 0;
    if (accountLimit > 0 && owed >= accountLimit) return this.refusal('account', 'deliveries', owed, accountLimit);
    const retryLimit = this.config.ingestMaxRetriesPerAccount;
    const retrying = this.retries.of(target.ownerId);
    // Retries drain as their receivers recover (or give up after the retry schedule), not at the runners' rate.
    if (retryLimit > 0 && retrying >= retryLimit) return this.refusal('account', 'retries', retrying, retryLimit, RETRY_AFTER_MAX_SECONDS);
    if (systemLimit > 0 && this.counted >= systemLimit) return this.refusal('system', 'invocations', this.counted, systemLimit);
    return undefined;
  }

  /**
   * The account bound alone, for invocations no other ingest bound refuses (manual runs): undefined while the
   * owner's sources and workflows have fewer than INGEST_MAX_PENDING_PER_ACCOUNT invocations waiting.
   */
  checkAccount(ownerId: string): BacklogRefusal | undefined {
    const { ingestMaxPendingPerAccount: limit, ingestMaxPending: systemLimit } = this.config;
    const queued = this.byAccount.get(ownerId) ?? 0;
    if (limit > 0 && queued >= limit) return this.refusal('account', 'invocations', queued, limit);
    // An account's own events would fill the service's bound alone: it is refused, the others count it up to its bound.
    const events = this.unroutedByAccount.get(ownerId) ?? 0;
    return systemLimit > 0 && events >= systemLimit ? this.refusal('account', 'events', events, systemLimit) : undefined;
  }

  /** Throws `429 backlog_full` (scope `account`, with Retry-After) when `checkAccount` refuses: for the /v1 routes that run something now. */
  assertAccountRoom(ownerId: string): void {
    const full = this.checkAccount(ownerId);
    if (!full) return;
    const { error, details } = describeRefusal(full);
    throw new ApiError(429, 'backlog_full', error, details, { 'retry-after': String(full.retryAfterSeconds) });
  }

  /** Counts an accepted invocation (for the drain rate). */
  accepted(): void {
    this.acceptedSinceRead++;
  }

  /** A refusal, counted; come back after `retryAfterSeconds`, by default once the backlog could drain at the rate seen. */
  private refusal(scope: BacklogRefusal['scope'], waiting: BacklogRefusal['waiting'], pending: number, limit: number, retryAfterSeconds?: number): BacklogRefusal {
    const key = `${scope} ${waiting}`;
    const seen = this.refusedBy.get(key) ?? this.refusedBy.set(key, { scope, waiting, count: 0 }).get(key)!;
    seen.count++;
    // Long enough for the excess over 90 % of the bound to drain at the rate seen, within [1, 30] s.
    const excess = pending - Math.floor(limit * 0.9);
    const seconds = retryAfterSeconds ?? (this.drainPerSecond > 0 ? Math.ceil(excess / this.drainPerSecond) : 1);
    return { scope, waiting, pending, limit, retryAfterSeconds: Math.min(RETRY_AFTER_MAX_SECONDS, Math.max(1, seconds)) };
  }

  private async read(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      const names = this.nats.names;
      const [info, router, deliveries] = await Promise.all([
        this.nats.jsm.streams.info(names.invocationsStream, { subjects_filter: names.allInvocations }),
        // Absent until a delivery app started: nothing is waiting for it then.
        this.nats.jsm.consumers.info(names.emitsStream, ROUTER_DURABLE).catch(() => undefined),
        this.nats.jsm.streams.info(names.deliveriesStream, { subjects_filter: names.allDeliveries }),
      ]);
      // Messages, each of which may hold several events: counted as the events the sampled ones hold on average.
      const unroutedMessages = router ? router.num_pending + router.num_ack_pending : 0;
      const samples = router && unroutedMessages > 0 ? await this.sampleUnrouted(router) : [];
      if (!samples.length) this.unroutedSamples.clear();
      this.unrouted = samples.length ? Math.round((unroutedMessages * samples.reduce((n, x) => n + x.events, 0)) / samples.length) : unroutedMessages;
      // A message may hold several requests (IngestBatches): each source's count scaled by its recent messages' size.
      const messages = subjectCounts(info.state.subjects ?? {});
      const scaled = (counts: Map<string, number>) => new Map([...counts].map(([id, n]) => [id, Math.round(n * this.batches.perMessage(id))]));
      const bySource = scaled(messages);
      // Every subject is listed (the client pages through a long list).
      const now = Date.now();
      const total = sum(bySource);
      if (this.lastReadAtMs) {
        // The last read's messages scaled as these are: a change of a source's mean is no drain (nor growth).
        const drained = sum(scaled(this.messagesBySource)) + this.acceptedSinceRead - total;
        const rate = Math.max(0, drained) / Math.max(0.001, (now - this.lastReadAtMs) / 1000);
        this.drainPerSecond = this.drainPerSecond ? this.drainPerSecond * 0.7 + rate * 0.3 : rate;
      }
      this.total = total;
      this.bySource = bySource;
      this.messagesBySource = messages;
      this.deliveries = deliveries.state.messages;
      // Postgres unreachable for a moment: the owners' figures stay as last read, the others move on.
      this.byAccount = await this.perOwner(this.emitterOwners, EMITTER_OWNERS, bySource).catch(() => this.byAccount);
      this.deliveriesByOwner = await this.perOwner(this.webhookOwners, WEBHOOK_OWNERS, subjectCounts(deliveries.state.subjects ?? {})).catch(() => this.deliveriesByOwner);
      const cap = this.config.ingestMaxPendingPerAccount;
      this.unroutedByAccount = cap > 0 && this.unrouted >= cap ? await this.unroutedOwners(samples).catch(() => this.unroutedByAccount) : new Map();
      this.counted = capped(this.unrouted, this.unroutedByAccount, cap) + capped(this.total, this.byAccount, cap);
      this.acceptedSinceRead = 0;
      this.lastReadAtMs = now;
    } catch (e) {
      this.logger.warn(`reading the invocation backlog failed: ${(e as Error).message}`);
    } finally {
      this.reading = false;
    }
  }

  /**
   * Up to UNROUTED_SAMPLES messages evenly over the sequences the router has not acknowledged (`sampleSeqs`): the
   * next read, the backlog moved on, finds most of them among the samples it keeps and reads only the new ones. A
   * message erased meanwhile is no sample; one not readable holds one event.
   */
  private async sampleUnrouted(router: ConsumerInfo): Promise<UnroutedSample[]> {
    const seqs = sampleSeqs(router.ack_floor.stream_seq + 1, router.delivered.stream_seq + router.num_pending, UNROUTED_SAMPLES);
    const kept = this.unroutedSamples;
    const read = await Promise.all(
      seqs.map(async (seq): Promise<[number, UnroutedSample | undefined]> => {
        const known = kept.get(seq);
        if (known) return [seq, known];
        const m = await this.nats.jsm.streams.getMessage(this.nats.names.emitsStream, { seq }).catch(() => undefined);
        return [seq, m && { subject: m.subject, events: readEmits(m.data)?.length ?? 1 }];
      }),
    );
    const found = read.filter((r): r is [number, UnroutedSample] => r[1] !== undefined);
    this.unroutedSamples = new Map(found);
    return found.map(([, sample]) => sample);
  }

  /** Unrouted events per owner: the samples' events per owner, each sampled event standing for its share of the backlog. */
  private async unroutedOwners(samples: UnroutedSample[]): Promise<Map<string, number>> {
    const bySubject: Record<string, number> = {};
    let events = 0;
    for (const { subject, events: n } of samples) {
      bySubject[subject] = (bySubject[subject] ?? 0) + n;
      events += n;
    }
    if (!events) return new Map();
    const perOwner = await this.perOwner(this.emitterOwners, EMITTER_OWNERS, subjectCounts(bySubject));
    const each = this.unrouted / events;
    return new Map([...perOwner].map(([owner, n]) => [owner, Math.round(n * each)]));
  }

  /**
   * Counts per id (a source, workflow or webhook) summed per owner, the owners read from Postgres once
   * (`ownersOf`) and remembered in `owners`.
   */
  private async perOwner(owners: Map<string, string>, ownersOf: OwnerQuery, counts: Map<string, number>): Promise<Map<string, number>> {
    const unknown = [...counts.keys()].filter((id) => !owners.has(id));
    if (unknown.length) {
      if (owners.size + unknown.length > OWNERS_CACHED_MAX) owners.clear();
      const conn = this.em.fork().getConnection();
      for (let i = 0; i < unknown.length; i += OWNER_QUERY_IDS) {
        const ids = unknown.slice(i, i + OWNER_QUERY_IDS);
        const [sql, params] = ownersOf(ids);
        const rows = (await conn.execute(sql, params)) as { id: string; owner_id: string }[];
        // One deleted meanwhile has no owner any more: '' keeps it from being asked again.
        for (const id of ids) owners.set(id, '');
        for (const r of rows) owners.set(r.id, r.owner_id);
      }
    }
    const out = new Map<string, number>();
    for (const [id, count] of counts) {
      const owner = owners.get(id);
      if (owner) out.set(owner, (out.get(owner) ?? 0) + count);
    }
    return out;
  }
}

/** The query (and its parameters) that reads the owners of `ids`. */
type OwnerQuery = (ids: string[]) => [string, string[]];
const marks = (ids: string[]): string => ids.map(() => '?').join(', ');
/** The owners of sources and workflows (an INVOCATIONS subject ends with one's id). */
const EMITTER_OWNERS: OwnerQuery = (ids) => [`select id, owner_id from sources where id in (${marks(ids)}) union all select id, owner_id from workflows where id in (${marks(ids)})`, [...ids, ...ids]];
/** The owners of webhooks (a DELIVERIES subject ends with one's id). */
const WEBHOOK_OWNERS: OwnerQuery = (ids) => [`select id, owner_id from webhooks where id in (${marks(ids)})`, ids];

/**
 * A backlog of `total` as the service's bound counts it: each owner's part up to `cap` (0: no cap); a part of no known
 * owner (a source deleted meanwhile, messages not sampled) counts in full.
 */
function capped(total: number, byOwner: Map<string, number>, cap: number): number {
  if (cap <= 0) return total;
  let owned = 0;
  let counted = 0;
  for (const n of byOwner.values()) {
    owned += n;
    counted += Math.min(n, cap);
  }
  return counted + Math.max(0, total - owned);
}

/**
 * At most `max` sequences spread evenly over [first, last]: one in each cell of a power-of-two size (the smallest
 * that leaves no more than `max` cells there), at an offset drawn from the cell's number. The same cells, and
 * samples, come back on the next read of a backlog that moved on; the offsets keep a backlog in a regular pattern
 * (two sources storing in turn) from being sampled at one of its phases only.
 */
export function sampleSeqs(first: number, last: number, max: number): number[] {
  const span = last - first + 1;
  if (span <= 0 || max <= 0) return [];
  let step = 1;
  // Past `max` sequences, the cells [first, last] meets are at most ceil(span / step) + 1.
  if (span > max) while (step < span && span > (max - 1) * step) step *= 2;
  const seqs: number[] = [];
  for (let cell = Math.floor(first / step); cell * step <= last; cell++) {
    const seq = cell * step + (mix(cell) % step);
    if (seq >= first && seq <= last) seqs.push(seq);
  }
  return seqs;
}

/** A well-spread 32-bit hash of an integer. */
function mix(n: number): number {
  let x = Math.imul(n ^ (n >>> 16), 0x45d9f3b);
  x = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
  return (x ^ (x >>> 16)) >>> 0;
}

const sum = (counts: Map<string, number>): number => [...counts.values()].reduce((a, n) => a + n, 0);

