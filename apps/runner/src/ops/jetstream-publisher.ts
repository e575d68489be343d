import { headers } from 'nats';
import type { Logger } from 'pino';
import { EmittedEvent, encodeJson, HttpResponseMessage, randomToken, UsageRecord } from '@app/contracts';
import { StreamPublisher, type NatsService } from '@app/nats';
import type { Publisher } from '../actors/actor-deps';
import type { EmitBudgets } from './emit-budget';
import type { RunnerMetrics } from './runner-metrics';

/** How long usage is summed per owner and day before one record is published. */
const USAGE_WINDOW_MS = 500;

/** Publishes an actor's side effects: events to EMITS, usage to USAGE, custom responses on the reply subject. */
export class JetStreamPublisher implements Publisher {
  private readonly stream: StreamPublisher;
  private readonly usage = new Map<string, Required<UsageRecord>>();
  private usageTimer: NodeJS.Timeout | undefined;
  private readonly usageToken = randomToken(10);
  private usageSeq = 0;

  constructor(
    private readonly nats: NatsService,
    private readonly logger: Logger,
    private readonly budgets: EmitBudgets = {},
    private readonly metrics?: RunnerMetrics,
  ) {
    this.stream = new StreamPublisher(nats.nc);
  }

  async publishEvents(events: EmittedEvent[]): Promise<void> {
    const encoded = events.map(encodeJson);
    const waitMs = this.budgetWaitMs(events, encoded);
    if (waitMs > 0) {
      this.metrics?.emitsHeldBack.inc(events.length);
      await new Promise((r) => setTimeout(r, waitMs));
    }
    // Issued back to back on one connection: stored in this order; each id dedupes a re-run.
    await Promise.all(events.map((e, i) => this.stream.publish(this.nats.names.emit(e.emitterId), encoded[i], e.emitId)));
  }

  /** How long the events must wait for their accounts' budgets (events and bytes), taking them from both. */
  private budgetWaitMs(events: EmittedEvent[], encoded: Uint8Array[]): number {
    const { events: count, bytes } = this.budgets;
    if (!count && !bytes) return 0;
    const byOwner = new Map<string, { n: number; bytes: number }>();
    events.forEach((e, i) => {
      const t = byOwner.get(e.ownerId) ?? { n: 0, bytes: 0 };
      t.n++;
      t.bytes += encoded[i].byteLength;
      byOwner.set(e.ownerId, t);
    });
    let waitMs = 0;
    for (const [owner, t] of byOwner) waitMs = Math.max(waitMs, count?.take(owner, t.n) ?? 0, bytes?.take(owner, t.bytes) ?? 0);
    return waitMs;
  }

  close(): void {
    this.flushUsage();
    this.stream.close();
  }

  /**
   * Usage is published without waiting for JetStream's acknowledgement (a
   * core publish captured by the USAGE stream, deduplicated by its
   * `Nats-Msg-Id`); a lost record only under-counts usage. An invocation that
   * may have been counted before (`exact`) is published at once with the id
   * `usage:<invocationId>`, so it counts once. The others (first deliveries of
   * invocations with unique ids: most HTTP requests) are summed per owner and
   * UTC day for USAGE_WINDOW_MS into one record: one stored message, delivery
   * and ack for many invocations instead of one each.
   */
  publishUsage(usage: UsageRecord, exact = false): void {
    if (exact) return this.publishRecord(usage, `usage:${usage.invocationId}`);
    const key = `${usage.ownerId}|${new Date(usage.finishedAtMs).toISOString().slice(0, 10)}`;
    const sum = this.usage.get(key);
    if (sum) {
      sum.invocations += usage.invocations ?? 1;
      sum.computeMs += usage.computeMs;
      sum.sourceId = usage.sourceId;
      sum.invocationId = usage.invocationId;
      sum.finishedAtMs = usage.finishedAtMs;
    } else {
      this.usage.set(key, { ...usage, invocations: usage.invocations ?? 1 });
    }
    if (!this.usageTimer) {
      this.usageTimer = setTimeout(() => this.flushUsage(), USAGE_WINDOW_MS);
      this.usageTimer.unref?.();
    }
  }

  private publishRecord(usage: UsageRecord, msgId: string): void {
    const h = headers();
    h.set('Nats-Msg-Id', msgId);
    try {
      this.nats.nc.publish(this.nats.names.usage(usage.ownerId), encodeJson(usage), { headers: h });
    } catch (err) {
      this.logger.warn({ err, owner_id: usage.ownerId, invocation_id: usage.invocationId, invocations: usage.invocations ?? 1 }, 'usage record not published');
    }
  }

  /** Publishes the summed usage records now. */
  flushUsage(): void {
    clearTimeout(this.usageTimer);
    this.usageTimer = undefined;
    for (const usage of this.usage.values()) this.publishRecord(usage, `usage:${this.usageToken}:${++this.usageSeq}`);
    this.usage.clear();
  }

  /**
   * A custom response goes back as one NATS message: one larger than the server's `max_payload` is answered
   * `502 response_too_large` at once, instead of leaving the client to wait for the api's timeout.
   */
  reply(subject: string, response: HttpResponseMessage): void {
    const data = encodeJson(response);
    const max = this.nats.maxPayload;
    if (data.byteLength <= max) return this.nats.nc.publish(subject, data);
    const error = { error: `the source's response is ${data.byteLength} bytes, over the ${max} bytes one NATS message carries (the server's max_payload)`, code: 'response_too_large' };
    this.nats.nc.publish(subject, encodeJson({ status: 502, headers: { 'content-type': 'application/json' }, body: JSON.stringify(error) }));
  }
}
