import { headers } from 'nats';
import type { Logger } from 'pino';
import { EmittedEvent, encodeJson, HttpResponseMessage, randomToken, UsageRecord } from '@app/contracts';
import { StreamPublisher, type NatsService } from '@app/nats';
import type { Publisher } from '../actors/actor-deps';

/** Publishes an actor's side effects: events to EMITS, usage to USAGE, custom responses on the reply subject. */
/** How long usage is summed per owner and day before one record is published. */
const USAGE_WINDOW_MS = 500;

export class JetStreamPublisher implements Publisher {
  private readonly stream: StreamPublisher;
  private readonly usage = new Map<string, Required<UsageRecord>>();
  private usageTimer: NodeJS.Timeout | undefined;
  private readonly usageToken = randomToken(10);
  private usageSeq = 0;

  constructor(private readonly nats: NatsService, private readonly logger: Logger) {
    this.stream = new StreamPublisher(nats.nc);
  }

  async publishEvents(events: EmittedEvent[]): Promise<void> {
    // Issued back to back on one connection: stored in this order; each id dedupes a re-run.
    await Promise.all(events.map((e) => this.stream.publish(this.nats.names.emit(e.emitterId), encodeJson(e), e.emitId)));
  }

  close(): void {
    this.flushUsage();
    this.stream.close();
  }

  /**
   * Usage is summed per owner and UTC day for USAGE_WINDOW_MS, then published
   * without waiting for JetStream's acknowledgement (a core publish captured by
   * the USAGE stream, with a unique `Nats-Msg-Id`): one record for many
   * invocations instead of a stored message, a delivery and an ack each. A
   * lost record (a crash inside the window) only under-counts usage; an
   * invocation run again after a redelivery is counted again.
   */
  publishUsage(usage: UsageRecord): void {
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

  /** Publishes the summed usage records now. */
  flushUsage(): void {
    clearTimeout(this.usageTimer);
    this.usageTimer = undefined;
    for (const usage of this.usage.values()) {
      const h = headers();
      h.set('Nats-Msg-Id', `usage:${this.usageToken}:${++this.usageSeq}`);
      try {
        this.nats.nc.publish(this.nats.names.usage(usage.ownerId), encodeJson(usage), { headers: h });
      } catch (err) {
        this.logger.warn({ err, owner_id: usage.ownerId, invocations: usage.invocations }, 'usage record not published');
      }
    }
    this.usage.clear();
  }

  reply(subject: string, response: HttpResponseMessage): void {
    this.nats.nc.publish(subject, encodeJson(response));
  }
}
