import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { FastifyReply } from 'fastify';
import { ConsumerMessages, DeliverPolicy } from 'nats';
import { APP_CONFIG, AppConfig } from '@app/config';
import { decodeJson, EmittedEvent } from '@app/contracts';
import { NatsService } from '@app/nats';
import { parseEventId, summaryOfEmit } from '../events/event-summary.dto';
import { SSE_RESPONSE_HEADERS } from '../common/response-headers';

export type StreamKind = 'emits' | 'observations';

/** Replay starts this much before the resume id's time, so clock skew between emitters cannot skip events. */
const REPLAY_SLACK_MS = 5_000;

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

const belongs = (kind: StreamKind, name: string): boolean => (kind === 'observations') === (name === '$logs' || name === '$errors');

/**
 * Writes one unnamed SSE message per event (`id:` = event id, `data:` = the
 * event summary JSON) from an ordered JetStream consumer on the source's emit
 * subject; with a resume point it replays the stream from there first. Access
 * is checked again at every keep-alive (`SSE_KEEPALIVE_MS`): a stream whose key
 * was revoked or whose caller left the source's org ends.
 */
@Injectable()
export class SseService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('SseService');
  private readonly open = new Set<() => void>();

  constructor(private readonly nats: NatsService, @Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** Ends every open stream before the HTTP server closes, which would otherwise wait on them forever. */
  beforeApplicationShutdown(): void {
    for (const close of [...this.open]) close();
  }

  async stream(reply: FastifyReply, sourceId: string, kind: StreamKind, after: { ms: number; seq: number } | undefined, expandSummary: boolean, stillAllowed: () => Promise<boolean>): Promise<void> {
    if (answeredHead(reply)) return;
    await this.nats.ensureConnected();
    const consumer = await this.nats.js.consumers.get(this.nats.names.emitsStream, {
      filterSubjects: this.nats.names.emit(sourceId),
      ...(after ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(Math.max(0, after.ms - REPLAY_SLACK_MS)).toISOString() } : { deliver_policy: DeliverPolicy.New }),
    });
    const messages: ConsumerMessages = await consumer.consume({ max_messages: 256 });
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, SSE_RESPONSE_HEADERS);
    res.write(':sse-handshake\n\n');
    let closed = false;
    // Each keep-alive first checks that the caller may still read the source (key not revoked, still a member).
    const timer = setInterval(() => {
      void stillAllowed().then((ok) => {
        if (closed) return;
        if (ok) res.write(':sse-handshake\n\n');
        else close();
      });
    }, this.config.sseKeepaliveMs);
    const close = (): void => {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      messages.stop();
      this.open.delete(close);
      res.end();
    };
    this.open.add(close);
    res.on('close', close);
    void this.pump(messages, res, sourceId, kind, after, expandSummary, () => closed).finally(close);
  }

  private async pump(messages: ConsumerMessages, res: FastifyReply['raw'], sourceId: string, kind: StreamKind, after: { ms: number; seq: number } | undefined, expandSummary: boolean, isClosed: () => boolean): Promise<void> {
    try {
      for await (const m of messages) {
        if (isClosed()) break;
        let e: EmittedEvent;
        try {
          e = decodeJson<EmittedEvent>(m.data);
        } catch {
          continue;
        }
        if (!belongs(kind, e.name ?? '')) continue;
        const id = parseEventId(e.id);
        if (after && id && (id.ms < after.ms || (id.ms === after.ms && id.seq <= after.seq))) continue;
        if (!res.write(`id: ${e.id}\ndata: ${JSON.stringify(summaryOfEmit(e, expandSummary))}\n\n`)) {
          await new Promise<void>((r) => {
            res.once('drain', r);
            res.once('close', r);
          });
        }
      }
    } catch (err) {
      this.logger.warn(`event stream of ${sourceId} ended: ${(err as Error).message}`);
    }
  }
}
