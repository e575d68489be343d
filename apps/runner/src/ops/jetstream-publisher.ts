import { headers } from 'nats';
import type { Logger } from 'pino';
import { EmittedEvent, encodeJson, HttpResponseMessage, UsageRecord } from '@app/contracts';
import { StreamPublisher, type NatsService } from '@app/nats';
import type { Publisher } from '../actors/actor-deps';

/** Publishes an actor's side effects: events to EMITS, usage to USAGE, custom responses on the reply subject. */
export class JetStreamPublisher implements Publisher {
  private readonly stream: StreamPublisher;

  constructor(private readonly nats: NatsService, private readonly logger: Logger) {
    this.stream = new StreamPublisher(nats.nc);
  }

  async publishEvents(events: EmittedEvent[]): Promise<void> {
    // Issued back to back on one connection: stored in this order; each id dedupes a re-run.
    await Promise.all(events.map((e) => this.stream.publish(this.nats.names.emit(e.emitterId), encodeJson(e), e.emitId)));
  }

  close(): void {
    this.stream.close();
  }

  /**
   * Usage is published without waiting for JetStream's acknowledgement (a core
   * publish captured by the USAGE stream, deduplicated by its `Nats-Msg-Id`):
   * it halves the round trips of a trivial invocation, and a lost record only
   * under-counts usage.
   */
  publishUsage(usage: UsageRecord): void {
    const h = headers();
    h.set('Nats-Msg-Id', `usage:${usage.invocationId}`);
    try {
      this.nats.nc.publish(this.nats.names.usage(usage.ownerId), encodeJson(usage), { headers: h });
    } catch (err) {
      this.logger.warn({ err, source_id: usage.sourceId, invocation_id: usage.invocationId }, 'usage record not published');
    }
  }

  reply(subject: string, response: HttpResponseMessage): void {
    this.nats.nc.publish(subject, encodeJson(response));
  }
}
