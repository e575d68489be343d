import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { BadRequestError } from '@app/contracts';
import { Auth, AuthContext, namespaceOf } from '../auth/auth.context';
import { Input, mergeInput, missingIn, requiredString, requireNonEmpty } from '../common/input';
import { validateChannel } from '../common/channel-name';
import { AutoSubscriptionDto, SubscriptionDto, SubscriptionsService } from './subscriptions.service';
import { assertEmitterId, assertListenerId } from './endpoints';

@Controller('v1')
export class SubscriptionsController {
  constructor(private readonly subs: SubscriptionsService) {}

  /** Idempotent: creating an existing subscription returns it. Parameters in the query or the body. */
  @Post('subscriptions')
  @HttpCode(200)
  async create(@Auth() auth: AuthContext, @Query() query: unknown, @Body() body: unknown): Promise<{ data: SubscriptionDto }> {
    const input = mergeInput(query, body);
    requireNonEmpty(query, body, ['emitter_id', 'listener_id']);
    const emitterId = requiredString(input, 'emitter_id', { maxLength: 255 });
    const listenerId = requiredString(input, 'listener_id', { maxLength: 255 });
    return { data: await this.subs.create(auth, input.org_id, emitterId, listenerId, validateChannel(input.event_name)) };
  }

  /** `event_name` is required (`event_name=` for the default channel). 204, or 404 when no such subscription exists. */
  @Delete('subscriptions')
  @HttpCode(204)
  async delete(@Auth() auth: AuthContext, @Query() query: unknown, @Body() body: unknown): Promise<void> {
    const input = mergeInput(query, body);
    requireNonEmpty(query, body, ['emitter_id', 'listener_id']);
    const emitterId = requiredString(input, 'emitter_id', { maxLength: 255 });
    const listenerId = requiredString(input, 'listener_id', { maxLength: 255 });
    // What no subscription can name is malformed input (400), as on POST, not a subscription not found.
    assertEmitterId(emitterId);
    assertListenerId(listenerId);
    if (input.event_name === undefined) throw new BadRequestError('event_name is required (pass event_name= for the default channel)', { field: 'event_name' });
    await this.subs.delete(auth, emitterId, listenerId, validateChannel(input.event_name));
  }

  @Post('auto_subscriptions')
  @HttpCode(200)
  async createAuto(@Auth() auth: AuthContext, @Query() query: unknown, @Body() body: unknown): Promise<{ data: AutoSubscriptionDto }> {
    const input = mergeInput(query, body);
    requireNonEmpty(query, body, ['event_name', 'listener_id']);
    const eventName = requiredString(input, 'event_name');
    // A JSON body's event_name was checked by the route's schema; one in the query or a form is text, checked here alike.
    if (eventName !== '$errors' && eventName !== '$logs') {
      throw new BadRequestError('event_name must be one of "$errors", "$logs"', { in: missingIn(query, body, ['event_name']), field: 'event_name', allowed: ['$errors', '$logs'] });
    }
    return { data: await this.subs.createAuto(auth, input.org_id, requiredString(input, 'listener_id', { maxLength: 255 }), eventName) };
  }

  /** Your subscriptions, or with `org_id` the org's. */
  @Get('users/me/subscriptions')
  async listMine(@Auth() auth: AuthContext, @Query() query: Input): Promise<{ data: SubscriptionDto[] }> {
    return { data: await this.subs.list(namespaceOf(auth, query.org_id)) };
  }

  /** `/workspaces/{org_id}/subscriptions` is the same list under Pipedream's newer name for orgs. */
  @Get(['orgs/:org_id/subscriptions', 'workspaces/:org_id/subscriptions'])
  async listOrg(@Auth() auth: AuthContext, @Param('org_id') orgId: string, @Query() query: unknown): Promise<{ data: SubscriptionDto[] }> {
    return { data: await this.subs.list(namespaceOf(auth, orgId)) };
  }
}
