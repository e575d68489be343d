import { Body, Controller, Delete, Get, HttpCode, Param, Query } from '@nestjs/common';
import { BadRequestError } from '@app/contracts';
import { Auth, AuthContext } from '../auth/auth.context';
import { validateChannel } from '../common/channel-name';
import { Input, mergeInput, missingIn } from '../common/input';
import { Page, parsePageQuery } from '../common/pagination';
import { EventSummaryDto, parseExpand } from './event-summary.dto';
import { EventsService, SummaryQuery } from './events.service';

function summaryQuery(input: Input, channel?: string): SummaryQuery {
  // Absent reads every channel but $errors and $logs; a name no event can have is refused as POST /subscriptions refuses it.
  const eventName = channel ?? (input.event_name === undefined ? undefined : validateChannel(input.event_name));
  return { ...parsePageQuery(input), expand: parseExpand(input.expand), eventName };
}

@Controller('v1')
export class EventsController {
  constructor(private readonly events: EventsService) {}

  /** Newest first; `event_name` selects one channel (`$errors`, `$logs`, a custom name, or empty for the default one). */
  @Get('sources/:id/event_summaries')
  async sourceSummaries(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: unknown): Promise<Page<EventSummaryDto>> {
    const q = summaryQuery(query as Input);
    await this.events.assertSource(auth, id);
    return this.events.list(id, q);
  }

  @Delete('sources/:id/events')
  @HttpCode(202)
  async deleteEvents(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: unknown, @Body() body: unknown): Promise<void> {
    const input = mergeInput(query, body);
    const source = await this.events.assertSource(auth, id);
    const str = (name: string): string | undefined => {
      const v = input[name];
      // Empty is not "absent": an empty variable in a client must not delete every event.
      if (v === undefined) return undefined;
      if (typeof v !== 'string') throw new BadRequestError(`${name} must be a string`, { field: name });
      return v;
    };
    await this.events.requestDelete(source, str('start_id'), str('end_id'), missingIn(query, body, ['start_id', 'end_id']));
  }

  /** Events a workflow emitted with `$.send.emit` (default and custom channels), newest first. */
  @Get('workflows/:id/event_summaries')
  async workflowSummaries(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: unknown): Promise<Page<EventSummaryDto>> {
    const q = summaryQuery(query as Input);
    await this.events.assertWorkflow(auth, id);
    return this.events.list(id, q);
  }

  /**
   * `/workflows/{id}/$errors/event_summaries`. The channel is a parameter so that both `$errors` and its
   * percent-encoded form `%24errors` (which the router leaves encoded in static segments) reach it; its contract
   * declares `$errors` as the one value it takes (any other is a 400 before this handler).
   */
  @Get('workflows/:id/:channel/event_summaries')
  async workflowErrors(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: unknown): Promise<Page<EventSummaryDto>> {
    // The path names the channel: its contract takes no event_name.
    const q = summaryQuery(query as Input, '$errors');
    await this.events.assertWorkflow(auth, id);
    return this.events.list(id, q);
  }
}
