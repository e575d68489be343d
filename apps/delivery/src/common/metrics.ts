import { Injectable } from '@nestjs/common';
import { Counter, Histogram, Registry } from 'prom-client';

/** Prometheus counters and histograms of the delivery app. */
@Injectable()
export class DeliveryMetrics {
  readonly eventsIndexed: Counter<'channel_class'>;
  readonly eventsRouted: Counter<'listener_kind'>;
  readonly deleteRequests: Counter;
  readonly webhookAttempts: Counter<'outcome'>;
  readonly webhookLatency: Histogram<'outcome'>;
  readonly emitToReceipt: Histogram;
  readonly usageRecords: Counter;
  readonly indexBatch: Histogram;

  constructor(registry: Registry) {
    this.eventsIndexed = new Counter({ name: 'delivery_events_indexed_total', help: 'events written to event_summaries', labelNames: ['channel_class'], registers: [registry] });
    this.eventsRouted = new Counter({ name: 'delivery_events_routed_total', help: 'deliveries and invocations published for subscriptions', labelNames: ['listener_kind'], registers: [registry] });
    this.deleteRequests = new Counter({ name: 'delivery_delete_requests_total', help: 'event deletion requests handled', registers: [registry] });
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
    this.indexBatch = new Histogram({ name: 'delivery_index_batch_size', help: 'events per indexer batch', buckets: [1, 5, 20, 50, 100, 250, 500], registers: [registry] });
  }
}
