import { Controller, Get, Headers, Param, Query, Res } from '@nestjs/common';
import { FastifyReply } from 'fastify';
import type { Subscription } from 'nats';
import { BadRequestError, decodeJson, parseEventId, WorkflowSseMessage } from '@app/contracts';
import { NatsService } from '@app/nats';
import { ApiKeyGuard, bearerKey } from '../auth/api-key.guard';
import { Auth, AuthContext } from '../auth/auth.context';
import { EventsService } from '../events/events.service';
import { answeredHead, BATCH_BYTES, eventView, SseService, StreamKind } from '../sse/sse.service';
import { SSE_RESPONSE_HEADERS } from '../common/response-headers';
import { keepAliveAccess } from '../sse/keep-alive-access';

/**
 * Live streams of a workflow: `emits` ($.send.emit) and `observations` ($logs
 * and $errors) as for sources, and `sse`: its `$.send.sse` events (live only,
 * one named SSE message per event: `event: <channel>`, `data: <payload JSON>`).
 */
@Controller('sse/p')
export class WorkflowSseController {
  constructor(
    private readonly events: EventsService,
    private readonly sse: SseService,
    private readonly guard: ApiKeyGuard,
    private readonly nats: NatsService,
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
    let sub: Subscription;
    try {
      sub = this.nats.nc.subscribe(this.nats.names.workflowSse(id));
      // The server has the subscription before the handshake says the stream is open.
      await this.nats.nc.flush().catch((err: Error) => {
        sub.unsubscribe();
        throw err;
      });
    } catch (e) {
      release();
      throw e;
    }
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, SSE_RESPONSE_HEADERS);
    res.write(':sse-handshake\n\n');
    // Held as the event streams are: ended by an access change that denies it, the workflow's deletion, the shutdown.
    const held = this.sse.hold(res, id, this.access(authorization, id), release, () => sub.unsubscribe());
    let dropped = 0;
    const tellDropped = (): void => {
      if (dropped && !held.closed()) res.write(`: ${dropped} messages dropped: the reader fell behind\n\n`);
      dropped = 0;
    };
    res.on('drain', tellDropped);
    void (async () => {
      for await (const m of sub) {
        if (held.closed()) break;
        const pending = held.gate();
        if (pending && !(await pending)) break;
        let text: string;
        try {
          const e = decodeJson<WorkflowSseMessage>(m.data);
          text = `id: ${e.id}\nevent: ${e.channel}\ndata: ${JSON.stringify(e.payload)}\n\n`;
        } catch {
          continue;
        }
        // Live only: a reader that has not read what it was sent misses what comes meanwhile, and is told so. The api
        // holds for it at most what it holds for an event stream's reader: one batch.
        if (res.writableLength + Buffer.byteLength(text) > BATCH_BYTES) {
          dropped++;
          continue;
        }
        tellDropped();
        res.write(text);
      }
    })().finally(held.close);
  }

  private access(authorization: string, id: string): () => Promise<boolean> {
    const key = bearerKey(authorization) ?? '';
    return keepAliveAccess(async () => this.events.assertWorkflow(await this.guard.authenticate(key), id));
  }

  private async stream(auth: AuthContext, authorization: string, id: string, kind: StreamKind, lastId: string | undefined, query: Record<string, unknown>, reply: FastifyReply): Promise<void> {
    const view = eventView(query);
    await this.events.assertWorkflow(auth, id);
    const after = lastId ? parseEventId(lastId) : undefined;
    if (lastId && !after) throw new BadRequestError('Last-Event-ID must be an event id like 1700000000000-0', { header: 'last-event-id' });
    await this.sse.stream(reply, id, kind, after, view, this.access(authorization, id), auth.userId);
  }
}
