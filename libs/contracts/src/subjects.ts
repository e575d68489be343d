/** The durable consumer on EMITS through which the delivery apps index and route every event. */
export const ROUTER_DURABLE = 'router';

/**
 * Every JetStream name (streams, buckets, subjects) is built here from the
 * installation prefix, so tests and installations sharing a NATS server never
 * collide and apps never concatenate subject strings themselves.
 */
export class Names {
  constructor(readonly prefix: string) {
    if (prefix && !/^[A-Za-z0-9_-]+$/.test(prefix)) throw new Error(`NATS_PREFIX may hold letters, digits, _ and - only, got "${prefix}"`);
  }

  private subject(...tokens: (string | number)[]): string {
    return (this.prefix ? [this.prefix, ...tokens] : tokens).join('.');
  }
  private name(base: string): string {
    return this.prefix ? `${this.prefix}_${base}` : base;
  }

  // streams
  get invocationsStream(): string { return this.name('INVOCATIONS'); }
  get emitsStream(): string { return this.name('EMITS'); }
  get deliveriesStream(): string { return this.name('DELIVERIES'); }
  get usageStream(): string { return this.name('USAGE'); }
  /** Workflow sends (`$.send.http|email|s3`) waiting to be performed by the delivery app. */
  get sendsStream(): string { return this.name('SENDS'); }

  // buckets
  get sourcesBucket(): string { return this.name('sources'); }
  get sourceStateBucket(): string { return this.name('source-state'); }
  get leasesBucket(): string { return this.name('leases'); }
  get componentsStore(): string { return this.name('components'); }

  // subjects
  invocation(partition: number, sourceId: string): string { return this.subject('inv', partition, sourceId); }
  invocationsOfPartition(partition: number): string { return this.subject('inv', partition, '*'); }
  get allInvocations(): string { return this.subject('inv', '>'); }
  emit(emitterId: string): string { return this.subject('emit', emitterId); }
  get allEmits(): string { return this.subject('emit', '>'); }
  delivery(webhookId: string): string { return this.subject('dlv', webhookId); }
  get allDeliveries(): string { return this.subject('dlv', '>'); }
  /** Usage records (`UsageRecord`) of finished invocations, aggregated by the delivery app. */
  usage(ownerId: string): string { return this.subject('usage', ownerId); }
  get allUsage(): string { return this.subject('usage', '>'); }
  /** A workflow's sends (`SendMessage`), published by the runner after a successful run. */
  send(workflowId: string): string { return this.subject('send', workflowId); }
  get allSends(): string { return this.subject('send', '>'); }
  /** Core NATS: a workflow's `$.send.sse` events, streamed live by the api (no persistence). */
  workflowSse(workflowId: string): string { return this.subject('sse', workflowId); }
  /** Reply subject on which a customResponse HTTP request waits for `respond()`. */
  httpResponse(invocationId: string): string { return this.subject('resp', invocationId); }
  /** Reply subject of a customResponse request under its api replica's token (one wildcard subscription per replica). */
  httpResponseFor(replicaToken: string, invocationId: string): string { return this.subject('resp', replicaToken, invocationId); }
  /** Every reply subject of one api replica. */
  httpResponsesOf(replicaToken: string): string { return this.subject('resp', replicaToken, '*'); }
  /** Core-NATS notifications: `changed.<kind>` tells caches (subscriptions, webhooks, endpoints) to refresh. */
  changed(kind: 'subscriptions' | 'webhooks' | 'sources' | 'endpoints' | 'deleted'): string { return this.subject('changed', kind); }
  /** Event deletion requests, handled by the delivery app. */
  get deleteEvents(): string { return this.subject('ctl', 'delete-events'); }
  /** Access changes that restart accounts' sandbox processes, and deletions that retire them (`RestartSandboxes`), heard by every runner replica. */
  get restartSandboxes(): string { return this.subject('ctl', 'restart-sandboxes'); }
  /** Leases key of a partition. */
  leaseKey(partition: number): string { return `p.${partition}`; }
  /** Desired-state key of a source. */
  sourceKey(partition: number, sourceId: string): string { return `${partition}.${sourceId}`; }
}
