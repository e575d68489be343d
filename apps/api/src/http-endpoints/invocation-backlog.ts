import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { NatsService } from '@app/nats';

/** Why an HTTP request is refused with 429: whose backlog is full, how full, and when to come back. */
export interface BacklogRefusal {
  scope: 'source' | 'system';
  pending: number;
  limit: number;
  retryAfterSeconds: number;
}

export interface IngestStats {
  invocations_pending: number;
  events_unrouted: number;
  max_pending: number;
  max_pending_per_source: number;
  refused_total: number;
}

const RETRY_AFTER_MAX_SECONDS = 30;

/** The delivery app's consumer of EMITS: what it has not acknowledged is not yet indexed and routed. */
const ROUTER_DURABLE = 'router';

/**
 * Back-pressure for HTTP ingress: how many invocations wait in INVOCATIONS
 * (a work queue: stored and not yet acknowledged by a runner), per source and
 * in all, and how many emitted events wait for the delivery app, read every
 * INGEST_BACKLOG_POLL_MS. A request to a source whose invocations reach
 * INGEST_MAX_PENDING_PER_SOURCE, or while invocations and unrouted events
 * together reach INGEST_MAX_PENDING, is refused (429 with Retry-After) instead
 * of queueing behind minutes of work. The figures are as of the last read, so a
 * burst may pass a bound by what arrives within one poll interval.
 */
@Injectable()
export class InvocationBacklog implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('InvocationBacklog');
  private timer: NodeJS.Timeout | undefined;
  private total = 0;
  private unrouted = 0;
  private bySource = new Map<string, number>();
  /** Invocations drained per second (all sources), from the last two reads and the requests accepted between them. */
  private drainPerSecond = 0;
  private acceptedSinceRead = 0;
  private lastReadAtMs = 0;
  private reading = false;
  private refused = 0;

  constructor(
    private readonly nats: NatsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Figures for /healthz: the backlog as last read, the bounds, requests refused by this replica. */
  get stats(): IngestStats {
    return {
      invocations_pending: this.total,
      events_unrouted: this.unrouted,
      max_pending: this.config.ingestMaxPending,
      max_pending_per_source: this.config.ingestMaxPendingPerSource,
      refused_total: this.refused,
    };
  }

  get enabled(): boolean {
    return this.config.ingestMaxPending > 0 || this.config.ingestMaxPendingPerSource > 0;
  }

  onModuleInit(): void {
    if (!this.enabled) return;
    this.timer = setInterval(() => void this.read(), this.config.ingestBacklogPollMs);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** Undefined when the source may take one more invocation; else why not. */
  check(sourceId: string): BacklogRefusal | undefined {
    const { ingestMaxPending: systemLimit, ingestMaxPendingPerSource: sourceLimit } = this.config;
    const mine = this.bySource.get(sourceId) ?? 0;
    if (sourceLimit > 0 && mine >= sourceLimit) return this.refusal('source', mine, sourceLimit);
    if (systemLimit > 0 && this.total + this.unrouted >= systemLimit) return this.refusal('system', this.total + this.unrouted, systemLimit);
    return undefined;
  }

  /** Counts an accepted invocation (for the drain rate). */
  accepted(): void {
    this.acceptedSinceRead++;
  }

  private refusal(scope: BacklogRefusal['scope'], pending: number, limit: number): BacklogRefusal {
    this.refused++;
    // Long enough for the excess over 90 % of the bound to drain at the rate seen, within [1, 30] s.
    const excess = pending - Math.floor(limit * 0.9);
    const seconds = this.drainPerSecond > 0 ? Math.ceil(excess / this.drainPerSecond) : 1;
    return { scope, pending, limit, retryAfterSeconds: Math.min(RETRY_AFTER_MAX_SECONDS, Math.max(1, seconds)) };
  }

  private async read(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      const names = this.nats.names;
      const [info, router] = await Promise.all([
        this.nats.jsm.streams.info(names.invocationsStream, { subjects_filter: names.allInvocations }),
        // Absent until a delivery app started: nothing is waiting for it then.
        this.nats.jsm.consumers.info(names.emitsStream, ROUTER_DURABLE).catch(() => undefined),
      ]);
      this.unrouted = router ? router.num_pending + router.num_ack_pending : 0;
      const bySource = new Map<string, number>();
      for (const [subject, count] of Object.entries(info.state.subjects ?? {})) {
        const sourceId = subject.slice(subject.lastIndexOf('.') + 1);
        bySource.set(sourceId, (bySource.get(sourceId) ?? 0) + count);
      }
      const now = Date.now();
      const total = info.state.messages;
      if (this.lastReadAtMs) {
        const drained = this.total + this.acceptedSinceRead - total;
        const rate = Math.max(0, drained) / Math.max(0.001, (now - this.lastReadAtMs) / 1000);
        this.drainPerSecond = this.drainPerSecond ? this.drainPerSecond * 0.7 + rate * 0.3 : rate;
      }
      this.total = total;
      this.bySource = bySource;
      this.acceptedSinceRead = 0;
      this.lastReadAtMs = now;
    } catch (e) {
      this.logger.warn(`reading the invocation backlog failed: ${(e as Error).message}`);
    } finally {
      this.reading = false;
    }
  }
}
