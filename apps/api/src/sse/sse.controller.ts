import { Controller, Get, Headers, Param, Query, Res } from '@nestjs/common';
import { FastifyReply } from 'fastify';
import { BadRequestError } from '@app/contracts';
import { Auth, AuthContext } from '../auth/auth.context';
import { EventsService } from '../events/events.service';
import { parseEventId, parseExpand } from '../events/event-summary.dto';
import { SseService, StreamKind } from './sse.service';

/**
 * Live streams of a source: `emits` (default and custom channels) and
 * `observations` (`$logs` and `$errors`). Bearer auth like every route;
 * `Last-Event-ID` resumes after that event; `?expand=summary` adds each
 * event's `$emit` summary.
 */
@Controller('sse/dc')
export class SseController {
  constructor(private readonly events: EventsService, private readonly sse: SseService) {}

  @Get(':id/emits')
  emits(@Auth() auth: AuthContext, @Param('id') id: string, @Headers('last-event-id') lastId: string | undefined, @Query('expand') expand: unknown, @Res() reply: FastifyReply): Promise<void> {
    return this.open(auth, id, 'emits', lastId, expand, reply);
  }

  @Get(':id/observations')
  observations(@Auth() auth: AuthContext, @Param('id') id: string, @Headers('last-event-id') lastId: string | undefined, @Query('expand') expand: unknown, @Res() reply: FastifyReply): Promise<void> {
    return this.open(auth, id, 'observations', lastId, expand, reply);
  }

  private async open(auth: AuthContext, id: string, kind: StreamKind, lastId: string | undefined, expand: unknown, reply: FastifyReply): Promise<void> {
    const { summary } = parseExpand(expand);
    await this.events.assertSource(auth, id);
    const after = lastId ? parseEventId(lastId) : undefined;
    if (lastId && !after) throw new BadRequestError('Last-Event-ID must be an event id like 1700000000000-0', { header: 'last-event-id' });
    await this.sse.stream(reply, id, kind, after, summary);
  }
}
