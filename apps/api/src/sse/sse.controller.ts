import { Controller, Get, Headers, Param, Query, Res } from '@nestjs/common';
import { FastifyReply } from 'fastify';
import { ApiKeyGuard, bearerKey } from '../auth/api-key.guard';
import { Auth, AuthContext } from '../auth/auth.context';
import { EventsService } from '../events/events.service';
import { eventView, resumePoint, SseService, StreamKind } from './sse.service';
import { keepAliveAccess } from './keep-alive-access';

/**
 * Live streams of a source: `emits` (default and custom channels) and
 * `observations` (`$logs` and `$errors`). Bearer auth like every route;
 * `Last-Event-ID` resumes after that event; `?expand=summary` adds each
 * event's `$emit` summary. `/sources/{id}/sse` is Pipedream's address of the
 * emits stream (`https://api.pipedream.com/sources/dc_…/sse` in its docs).
 */
@Controller()
export class SseController {
  constructor(
    private readonly events: EventsService,
    private readonly sse: SseService,
    private readonly guard: ApiKeyGuard,
  ) {}

  @Get('sse/dc/:id/emits')
  emits(@Auth() auth: AuthContext, @Param('id') id: string, @Headers('last-event-id') lastId: string | undefined, @Headers('authorization') authorization: string, @Query() query: Record<string, unknown>, @Res() reply: FastifyReply): Promise<void> {
    return this.open(auth, authorization, id, 'emits', lastId, query, reply);
  }

  @Get('sources/:id/sse')
  pipedreamEmits(@Auth() auth: AuthContext, @Param('id') id: string, @Headers('last-event-id') lastId: string | undefined, @Headers('authorization') authorization: string, @Query() query: Record<string, unknown>, @Res() reply: FastifyReply): Promise<void> {
    return this.open(auth, authorization, id, 'emits', lastId, query, reply);
  }

  @Get('sse/dc/:id/observations')
  observations(@Auth() auth: AuthContext, @Param('id') id: string, @Headers('last-event-id') lastId: string | undefined, @Headers('authorization') authorization: string, @Query() query: Record<string, unknown>, @Res() reply: FastifyReply): Promise<void> {
    return this.open(auth, authorization, id, 'observations', lastId, query, reply);
  }

  private async open(auth: AuthContext, authorization: string, id: string, kind: StreamKind, lastId: string | undefined, query: Record<string, unknown>, reply: FastifyReply): Promise<void> {
    const view = eventView(query);
    await this.events.assertSource(auth, id);
    const after = resumePoint(lastId);
    // Access is checked again at every keep-alive: a revoked key or a removed member loses the stream too.
    const key = bearerKey(authorization) ?? '';
    const stillAllowed = keepAliveAccess(async () => this.events.assertSource(await this.guard.authenticate(key), id));
    await this.sse.stream(reply, id, kind, after, view, stillAllowed, auth.userId);
  }
}
