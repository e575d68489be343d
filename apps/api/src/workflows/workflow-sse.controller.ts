import { Controller, Get, Headers, Param, Query, Res } from '@nestjs/common';
import { FastifyReply } from 'fastify';
import { BATCH_BYTES } from '@app/nats';
import { ApiKeyGuard, bearerKey } from '../auth/api-key.guard';
import { Auth, AuthContext } from '../auth/auth.context';
import { EventsService } from '../events/events.service';
import { answeredHead, eventView, HeldStream, resumePoint, SseService, StreamKind } from '../sse/sse.service';
import { SSE_RESPONSE_HEADERS } from '../common/response-headers';
import { keepAliveAccess } from '../sse/keep-alive-access';
import { SseText, WorkflowSseHub } from './workflow-sse-hub';

/**
 * Live streams of a workflow: `emits` ($.send.emit) and `observations` ($logs
 * and $errors) as for sources, and `sse`: its `$.send.sse` events (live only,
 * one named SSE message per event: `event: <channel>`, `data: <payload JSON>`), read from one NATS subscription
 * per workflow however many read it (WorkflowSseHub).
 */
@Controller('sse/p')
export class WorkflowSseController {
  constructor(
    private readonly events: EventsService,
    private readonly sse: SseService,
    private readonly guard: ApiKeyGuard,
    private readonly hub: WorkflowSseHub,
  ) {}

  @Get(':id/emits')
  emits(@Auth() auth: AuthContext, @Param('id') id: string, @Headers('last-event-id') lastId: string | undefined, @Headers('authorization') authorization: string, @Query() query: Record<string, unknown>, @Res() reply: FastifyReply): Promise<void> {
    return this.stream(auth, authorization, id, 'emits', lastId, query, reply);
  }

  @Get(':id/observations')
  observations(@Auth() auth: AuthContext, @Param('id') id: string, @Headers('last-event-id') lastId: string | undefined, @Headers('authorization') authorization: string, @Query() query: Record<string, unknown>, @Res() reply: FastifyReply): Promise<void> {
    return this.stream(auth, authorization, id, 'observations', lastId, query, reply);
  }

  @Get(':id/sse')
  async live(@Auth() auth: AuthContext, @Param('id') id: string, @Headers('authorization') authorization: string, @Res() reply: FastifyReply): Promise<void> {
    await this.events.assertWorkflow(auth, id);
    if (answeredHead(reply)) return;
    const release = this.sse.admit(auth.userId);
    const res = reply.raw;
    /** What the reader is owed: messages written once its access is checked, in order; past BATCH_BYTES it misses them. */
    const queue: SseText[] = [];
    let queued = 0;
    let dropped = 0;
    let writing = false;
    let held: HeldStream | undefined;
    const tellDropped = (): void => {
      if (dropped && !held?.closed()) res.write(`: ${dropped} messages dropped: the reader fell behind\n\n`);
      dropped = 0;
    };
    const write = async (): Promise<void> => {
      if (writing || !held) return;
      writing = true;
      try {
        while (queue.length && !held.closed()) {
          const pending = held.gate();
          if (pending && !(await pending)) return;
          const m = queue.shift() as SseText;
          queued -= m.bytes;
          // Live only: a reader that has not read what it was sent misses what comes meanwhile, and is told so. The api
          // holds for it at most what it holds for an event stream's reader: one batch.
          if (res.writableLength + m.bytes > BATCH_BYTES) {
            dropped++;
            continue;
          }
          tellDropped();
          res.write(m.text);
        }
      } finally {
        writing = false;
      }
    };
    let leave: () => void;
    try {
      // The server has the subscription before the handshake says the stream is open.
      leave = await this.hub.join(id, (m) => {
        if (queued + m.bytes > BATCH_BYTES) dropped++;
        else {
          queue.push(m);
          queued += m.bytes;
        }
        void write();
      });
    } catch (e) {
      release();
      throw e;
    }
    reply.hijack();
    res.writeHead(200, SSE_RESPONSE_HEADERS);
    res.write(':sse-handshake\n\n');
    // Held as the event streams are: ended by an access change that denies it, the workflow's deletion, the shutdown.
    held = this.sse.hold(res, id, this.access(authorization, id), release, leave);
    res.on('drain', tellDropped);
    void write();
  }

  private access(authorization: string, id: string): () => Promise<boolean> {
    const key = bearerKey(authorization) ?? '';
    return keepAliveAccess(async () => this.events.assertWorkflow(await this.guard.authenticate(key), id));
  }

  private async stream(auth: AuthContext, authorization: string, id: string, kind: StreamKind, lastId: string | undefined, query: Record<string, unknown>, reply: FastifyReply): Promise<void> {
    const view = eventView(query);
    await this.events.assertWorkflow(auth, id);
    const after = resumePoint(lastId);
    await this.sse.stream(reply, id, kind, after, view, this.access(authorization, id), auth.userId);
  }
}
