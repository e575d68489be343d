import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The sender's figures the gauges read at scrape time. */
export interface SenderFigures {
  direct: number;
  queue: number;
  inFlight: number;
  failing: { inFlight: number; ownersWaiting: number };
}

/** Prometheus counters and histograms of the delivery app. */
@Injectable()
export class DeliveryMetrics {
  readonly eventsIndexed: Counter<'channel_class'>;
  readonly webhookRoutes: Counter<'path'>;
  readonly eventsRouted: Counter<'listener_kind'>;
  readonly chainStopped: Counter<'reason'>;
  readonly emitsHandedBack: Counter;
  readonly routeReads: Counter<'scope'>;
  readonly deleteRequests: Counter;
  readonly webhookAttempts: Counter<'outcome'>;
  readonly webhookHeldBack: Counter<'reason'>;
  readonly webhookPaused: Counter;
  readonly webhookLatency: Histogram<'outcome'>;
  readonly emitToReceipt: Histogram;
  readonly usageRecords: Counter;
  readonly indexBatch: Histogram;
  readonly eventsReindexed: Counter;
  readonly retriesWaiting: Gauge;
  readonly retriesOldestAge: Gauge;
  /** Where the backlog gauges read their figures (the webhook sender and the router), at scrape time. */
  private senderFigures?: () => SenderFigures;
  private routerFigures?: () => number;
  private retryFigures?: () => Promise<{ count: number; oldestSinceMs: number | null }>;
  /** One query per scrape for both retry gauges. */
  private retryRead?: { at: number; figures: Promise<{ count: number; oldestSinceMs: number | null }> };

  constructor(registry: Registry) {
    this.eventsIndexed = new Counter({ name: 'delivery_events_indexed_total', help: 'events written to event_summaries', labelNames: ['channel_class'], registers: [registry] });
    this.webhookRoutes = new Counter({ name: 'delivery_webhook_routes_total', help: 'webhook deliveries by path: direct (POSTed by the router\'s process, no DELIVERIES hop), queue (published to DELIVERIES: the webhook was failing, slow or busy)', labelNames: ['path'], registers: [registry] });
    this.eventsRouted = new Counter({ name: 'delivery_events_routed_total', help: 'deliveries and invocations published for subscriptions', labelNames: ['listener_kind'], registers: [registry] });
    this.chainStopped = new Counter({ name: 'delivery_chain_stopped_total', help: 'events not given to a listening source or workflow: reason depth (SUBSCRIPTION_MAX_DEPTH) or runs (SUBSCRIPTION_CHAIN_MAX_RUNS), their chain of subscriptions past a bound (its listeners already recorded an $errors event), or backlog, the listener\'s account has INGEST_MAX_PENDING_PER_ACCOUNT invocations waiting to run', labelNames: ['reason'], registers: [registry] });
    this.emitsHandedBack = new Counter({ name: 'delivery_emits_handed_back_total', help: 'EMITS messages handed back unrouted for 1 s: an owner of webhooks they route to had its share (2,500) of DELIVERIES publishes settling, so other accounts\' events were routed meanwhile', registers: [registry] });
    this.routeReads = new Counter({ name: 'delivery_route_reads_total', help: 'reads of the subscriptions and webhooks routing uses: scope all (every route: at start, after an org membership changed, and the safety net every 30 s or more), changed (only the routes a change named)', labelNames: ['scope'], registers: [registry] });
    this.deleteRequests = new Counter({ name: 'delivery_delete_requests_total', help: 'event deletion requests handled', registers: [registry] });
    this.webhookHeldBack = new Counter({ name: 'delivery_webhook_held_back_total', help: "Webhook deliveries parked unattempted in webhook_retries and acknowledged, to come again later: reason account (their webhook's account held WEBHOOK_HELD_PER_ACCOUNT; due in 5-15 s, longer each time held back again), share (it held a quarter of the replica's room while less than that was free; likewise) or slow (the excess of a slow webhook's queue over 1,000 waiting, or of a stalled one's over WEBHOOK_CONCURRENCY, while the replica was full; due when it should have drained, up to 36 s)", labelNames: ['reason'], registers: [registry] });
    this.webhookPaused = new Counter({ name: 'delivery_webhook_paused_total', help: 'times this replica stopped taking DELIVERIES messages because it held 10,000 (taken again at 8,000)', registers: [registry] });
    this.webhookAttempts = new Counter({ name: 'delivery_webhook_attempts_total', help: 'webhook POST attempts by outcome', labelNames: ['outcome'], registers: [registry] });
    this.webhookLatency = new Histogram({
      name: 'delivery_webhook_request_seconds',
      help: 'webhook POST duration',
      labelNames: ['outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15],
      registers: [registry],
    });
    this.emitToReceipt = new Histogram({
      name: 'delivery_emit_to_webhook_success_seconds',
      help: 'time from emit to a successful webhook response',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300, 3600],
      registers: [registry],
    });
    this.usageRecords = new Counter({ name: 'delivery_usage_records_total', help: 'usage records aggregated into usage_daily', registers: [registry] });
    this.eventsReindexed = new Counter({ name: 'delivery_events_reindexed_total', help: 'events of EMITS indexed again after Postgres restarted (INDEX_ASYNC_COMMIT)', registers: [registry] });
    this.indexBatch = new Histogram({ name: 'delivery_index_batch_size', help: 'events per indexer batch', buckets: [1, 5, 20, 50, 100, 250, 500], registers: [registry] });
    this.retriesWaiting = new Gauge({
      name: 'delivery_webhook_retries_waiting',
      help: 'webhook deliveries waiting in webhook_retries for their next attempt (all replicas: the same figure on each)',
      registers: [registry],
      collect: async () => {
        const f = await this.readRetries();
        if (f) this.retriesWaiting.set(f.count);
      },
    });
    // Where a backlog waits in this replica (the api's /metrics has the streams' backlogs), read at scrape time.
    const held = new Gauge({
      name: 'delivery_webhook_held',
      help: 'webhook deliveries this replica holds, waiting for a request slot or in flight: path direct (events routed here, their emits unacknowledged until the POST is answered) or queue (DELIVERIES messages)',
      labelNames: ['path'],
      registers: [registry],
      collect: () => {
        const f = this.senderFigures?.();
        if (!f) return;
        held.set({ path: 'direct' }, f.direct);
        held.set({ path: 'queue' }, f.queue);
      },
    });
    const scraped = (name: string, help: string, read: () => number | undefined): Gauge =>
      new Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          const n = read();
          if (n !== undefined) this.set(n);
        },
      });
    scraped('delivery_webhook_in_flight', 'webhook POSTs this replica has sent and not yet seen answered', () => this.senderFigures?.().inFlight);
    scraped('delivery_webhook_failing_in_flight', "attempts in flight at webhooks whose last attempt here failed (at most WEBHOOK_FAILING_IN_FLIGHT_PER_ACCOUNT per account)", () => this.senderFigures?.().failing.inFlight);
    scraped('delivery_webhook_failing_accounts_waiting', 'accounts whose failing webhooks have deliveries waiting for a slot: WEBHOOK_FAILING_IN_FLIGHT_PER_ACCOUNT of their attempts are in flight', () => this.senderFigures?.().failing.ownersWaiting);
    scraped('delivery_router_held', "EMITS messages (each one event or a batch of events) this replica's router took and has not acknowledged: buffered, being indexed and routed, or waiting for their direct webhook deliveries", () => this.routerFigures?.());
    this.retriesOldestAge = new Gauge({
      name: 'delivery_webhook_retries_oldest_age_seconds',
      help: 'time since the first failed attempt of the oldest waiting webhook retry (0 when none waits)',
      registers: [registry],
      collect: async () => {
        const f = await this.readRetries();
        if (f) this.retriesOldestAge.set(f.oldestSinceMs === null ? 0 : Math.max(0, (Date.now() - f.oldestSinceMs) / 1000));
      },
    });
  }

  /** Where the sender's backlog gauges read their figures. */
  watchSender(figures: () => SenderFigures): void {
    this.senderFigures = figures;
  }

  /** Where the router's backlog gauge reads its figure. */
  watchRouter(figure: () => number): void {
    this.routerFigures = figure;
  }

  /** Where the retry gauges read their figures (the webhook sender's retry queue). */
  watchRetries(figures: () => Promise<{ count: number; oldestSinceMs: number | null }>): void {
    this.retryFigures = figures;
  }

  private async readRetries(): Promise<{ count: number; oldestSinceMs: number | null } | undefined> {
    if (!this.retryFigures) return undefined;
    if (!this.retryRead || Date.now() - this.retryRead.at > 1000) this.retryRead = { at: Date.now(), figures: this.retryFigures() };
    // Postgres unreachable: the gauges keep their last values (the app's logs say why).
    return this.retryRead.figures.catch(() => undefined);
  }
}
