import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Query } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { BadRequestError } from '@app/contracts';
import { AddressPolicy, policyFromConfig } from '@app/net';
import { Auth, AuthContext, namespaceOf } from '../auth/auth.context';
import { Input, mergeInput, optionalBoolean, optionalString, requireNonEmpty } from '../common/input';
import { Page, parsePageQuery } from '../common/pagination';
import { toWebhookDto, validateWebhookUrl, WebhookDeliveryDto, WebhookDto } from './webhook.dto';
import { WebhookInput, WebhooksService } from './webhooks.service';

function textFields(input: Input): Pick<WebhookInput, 'name' | 'description'> {
  return {
    name: optionalString(input, 'name', { nullable: true, maxLength: 255 }),
    description: optionalString(input, 'description', { nullable: true, maxLength: 2000 }),
  };
}

@Controller('v1')
export class WebhooksController {
  private readonly policy: AddressPolicy;

  constructor(private readonly webhooks: WebhooksService, @Inject(APP_CONFIG) config: AppConfig) {
    this.policy = policyFromConfig(config);
  }

  /** Parameters in the query or the body; the response carries the signing secret, once. */
  @Post('webhooks')
  @HttpCode(200)
  async create(@Auth() auth: AuthContext, @Query() query: unknown, @Body() body: unknown): Promise<{ data: WebhookDto }> {
    // `url=` is missing, said as an absent url is (details.in, details.fields), not as a bad URL.
    requireNonEmpty(query, body, ['url']);
    const input = mergeInput(query, body);
    const ownerId = namespaceOf(auth, input.org_id);
    return { data: await this.webhooks.create(auth, ownerId, { url: validateWebhookUrl(input.url, this.policy), ...textFields(input) }) };
  }

  /** Your webhooks, or with `org_id` the org's. */
  @Get('users/me/webhooks')
  async listMine(@Auth() auth: AuthContext, @Query() query: Input): Promise<Page<WebhookDto>> {
    return this.webhooks.list(namespaceOf(auth, query.org_id), parsePageQuery(query));
  }

  @Get('orgs/:org_id/webhooks')
  async listOrg(@Auth() auth: AuthContext, @Param('org_id') orgId: string, @Query() query: unknown): Promise<Page<WebhookDto>> {
    return this.webhooks.list(namespaceOf(auth, orgId), parsePageQuery(query as Input));
  }

  @Get('webhooks/:id')
  async get(@Auth() auth: AuthContext, @Param('id') id: string): Promise<{ data: WebhookDto }> {
    return { data: toWebhookDto(await this.webhooks.get(auth, id)) };
  }

  /** Changes url, name, description or active; `active: true` re-enables a webhook disabled by a 410. */
  @Put('webhooks/:id')
  async update(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: unknown, @Body() body: unknown): Promise<{ data: WebhookDto }> {
    const input = mergeInput(query, body);
    const change: WebhookInput = { ...textFields(input), active: optionalBoolean(input, 'active') };
    if (input.url !== undefined) change.url = validateWebhookUrl(input.url, this.policy);
    if (Object.values(change).every((v) => v === undefined)) throw new BadRequestError('nothing to update: pass url, name, description or active');
    return { data: await this.webhooks.update(auth, id, change) };
  }

  @Delete('webhooks/:id')
  @HttpCode(204)
  async delete(@Auth() auth: AuthContext, @Param('id') id: string): Promise<void> {
    await this.webhooks.delete(auth, id);
  }

  /** Every delivery attempt, newest first. */
  @Get('webhooks/:id/deliveries')
  async deliveries(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: unknown): Promise<Page<WebhookDeliveryDto>> {
    return this.webhooks.deliveries(auth, id, parsePageQuery(query as Input));
  }
}
