import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Counter, Gauge, Registry } from 'prom-client';
import { APP_CONFIG, AppConfig } from '@app/config';
import { Public } from './auth/api-key.guard';
import { IngestRefusals, InvocationBacklog } from './http-endpoints/invocation-backlog';
import { HttpIngress } from './http-endpoints/http-ingress';
import { WorkflowSseHub } from './workflows/workflow-sse-hub';

/**
 * `GET /metrics` (Prometheus text) of this api replica: the backlog its HTTP ingress reads (every
 * INGEST_BACKLOG_POLL_MS) and the requests it refused with `429 backlog_full`. Service-wide totals with no
 * ids, like `/healthz`, on the api's own port (the runner and delivery apps have ports of their own).
 */
@Controller()
export class MetricsController {
  /** The public figures (also served on API_METRICS_PORT, with the process's own: main.ts). */
  readonly registry = new Registry();

  constructor(backlog: InvocationBacklog, ingress: HttpIngress, sseHub: WorkflowSseHub, @Inject(APP_CONFIG) config: AppConfig) {
    const registers = [this.registry];
    const gauge = (name: string, help: string, read: () => number): Gauge =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    gauge('api_ingest_invocations_pending', 'invocations waiting in INVOCATIONS for a runner, as last read', () => backlog.stats.invocations_pending);
    gauge('api_ingest_events_unrouted', "emitted events the delivery apps' router has not acknowledged (not yet indexed and routed, or waiting for their direct webhook POSTs), as last read", () => backlog.stats.events_unrouted);
    gauge('api_ingest_deliveries_pending', 'webhook deliveries waiting in DELIVERIES (routed, not yet sent), as last read', () => backlog.stats.deliveries_pending);
    gauge('api_ingest_retries_pending', 'webhook deliveries waiting in webhook_retries for their next attempt, as last counted (every WEBHOOK_RETRIES_COUNT_MS)', () => backlog.stats.retries_pending);
    gauge('api_workflow_sse_readers', 'open $.send.sse streams (GET /sse/p/{id}/sse) on this replica', () => sseHub.readers);
    gauge('api_workflow_sse_subscriptions', 'NATS subscriptions this replica holds for $.send.sse streams: one per workflow that has readers here, however many', () => sseHub.subscriptions);
    gauge('api_ingest_drain_per_second', 'invocations the runners took from INVOCATIONS per second, as estimated from the last reads', () => backlog.drainRate);
    const bounds = new Gauge({ name: 'api_ingest_bound', help: 'the back-pressure bounds (0 = none): system INGEST_MAX_PENDING, source INGEST_MAX_PENDING_PER_SOURCE, account INGEST_MAX_PENDING_PER_ACCOUNT, account_deliveries INGEST_MAX_PENDING_DELIVERIES_PER_ACCOUNT, account_retries INGEST_MAX_RETRIES_PER_ACCOUNT', labelNames: ['bound'], registers });
    bounds.set({ bound: 'system' }, config.ingestMaxPending);
    bounds.set({ bound: 'source' }, config.ingestMaxPendingPerSource);
    bounds.set({ bound: 'account' }, config.ingestMaxPendingPerAccount);
    bounds.set({ bound: 'account_deliveries' }, config.ingestMaxPendingDeliveriesPerAccount);
    bounds.set({ bound: 'account_retries' }, config.ingestMaxRetriesPerAccount);
    new Counter({
      name: 'api_ingress_requests_total',
      help: 'requests to HTTP endpoints (/e/…) this replica answered, by the way they came in: path="fast" without the web framework (INGRESS_FAST_PATH), path="route" through its route',
      labelNames: ['path'],
      registers,
      collect() {
        // The ingress counts; the counter shows its totals at each scrape.
        this.reset();
        for (const path of ['fast', 'route'] as const) this.inc({ path }, ingress.served[path]);
      },
    });
    // The backlog counts its refusals; the counter catches up with them at each scrape.
    const counted = new Map<IngestRefusals, number>();
    const refused: Counter<'scope' | 'waiting'> = new Counter({
      name: 'api_ingest_refused_total',
      help: 'requests this replica answered 429 backlog_full, by the scope of the full backlog and what waited in it',
      labelNames: ['scope', 'waiting'],
      registers,
      collect() {
        for (const r of backlog.refusals) {
          const delta = r.count - (counted.get(r) ?? 0);
          if (delta > 0) refused.inc({ scope: r.scope, waiting: r.waiting }, delta);
          counted.set(r, r.count);
        }
      },
    });
  }

  @Public()
  @Get('metrics')
  async metrics(@Res() reply: FastifyReply): Promise<void> {
    const text = await this.registry.metrics();
    void reply.header('content-type', this.registry.contentType).header('cache-control', 'no-store').send(text);
  }
}
