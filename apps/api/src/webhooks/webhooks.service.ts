import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { EntityManager, LockMode } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { encryptValue, newId, NotFoundError } from '@app/contracts';
import { AutoSubscription, inSnapshot, Subscription, Webhook, WebhookDelivery } from '@app/db';
import { announceRoutes, NatsService } from '@app/nats';
import { assertPathResource, AuthContext } from '../auth/auth.context';
import { assertRoomFor } from '../common/account-quota';
import { finishPage, keysetClause, ownedPage, Page, PageQuery, signedCursor } from '../common/pagination';
import { keptUrl, toDeliveryDto, toWebhookDto, WebhookDeliveryDto, WebhookDto } from './webhook.dto';
import { givenUrl, putUrl } from './webhook-url';

export interface WebhookInput {
  url?: string;
  name?: string | null;
  description?: string | null;
  active?: boolean;
}

/** Webhook targets: create (secret shown once), read, update, delete, and their delivery attempts. */
@Injectable()
export class WebhooksService {
  constructor(private readonly em: EntityManager, private readonly nats: NatsService, @Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async create(auth: AuthContext, ownerId: string, input: WebhookInput & { url: string }): Promise<WebhookDto> {
    const secret = 'whsec_' + randomBytes(24).toString('base64');
    const webhook = Object.assign(new Webhook(), {
      id: newId('webhook'),
      ownerId,
      userId: auth.userId,
      name: input.name ?? null,
      description: input.description ?? null,
      active: true,
      secret: encryptValue(this.config.secretsKey, secret),
    });
    putUrl(webhook, keptUrl(input.url), this.config.secretsKey);
    await this.em.fork().transactional(async (em) => {
      await assertRoomFor(em, 'webhooks', ownerId, this.config.webhooksMaxPerAccount);
      await em.persist(webhook).flush();
    });
    await this.changed(webhook.id);
    return toWebhookDto(webhook, secret);
  }

  async get(auth: AuthContext, id: string, em = this.em.fork()): Promise<Webhook> {
    return assertPathResource(auth, await em.findOne(Webhook, { id }), 'webhook', id);
  }

  list(ownerId: string, page: PageQuery): Promise<Page<WebhookDto>> {
    return inSnapshot(this.em, (em) => this.readPage(em, ownerId, page));
  }

  private readPage(em: EntityManager, ownerId: string, page: PageQuery): Promise<Page<WebhookDto>> {
    return ownedPage(em, { entity: Webhook, table: 'webhooks', softDeleted: false }, ownerId, page, this.config.secretsKey, () => (w: Webhook) => toWebhookDto(w));
  }

  async update(auth: AuthContext, id: string, input: WebhookInput): Promise<WebhookDto> {
    const em = this.em.fork();
    const webhook = await this.get(auth, id, em);
    if (input.url !== undefined) putUrl(webhook, keptUrl(input.url, givenUrl(webhook, this.config.secretsKey)), this.config.secretsKey);
    if (input.name !== undefined) webhook.name = input.name;
    if (input.description !== undefined) webhook.description = input.description;
    if (input.active !== undefined) {
      webhook.active = input.active;
      if (input.active) webhook.disabledReason = null;
    }
    await em.flush();
    // A disabled webhook's waiting retries go (its queued deliveries are dropped too when they come up).
    if (input.active === false) await em.getConnection().execute(`delete from webhook_retries where webhook_id = ?`, [id], 'run');
    await this.changed(id);
    return toWebhookDto(webhook);
  }

  /** Deletes the webhook, its subscriptions and auto-subscriptions, its delivery log, its waiting retries and its queued deliveries. */
  async delete(auth: AuthContext, id: string): Promise<void> {
    const em = this.em.fork();
    const webhook = await this.get(auth, id, em);
    await em.transactional(async (tx) => {
      // Locked first: a subscription made meanwhile finds the webhook gone (SubscriptionsService.create locks it too), and of two deletes
      // at once the second finds nothing.
      if (!(await tx.findOne(Webhook, { id: webhook.id }, { lockMode: LockMode.PESSIMISTIC_WRITE }))) throw NotFoundError.of('webhook', id);
      await tx.nativeDelete(Subscription, { listenerId: id });
      await tx.nativeDelete(AutoSubscription, { listenerId: id });
      await tx.nativeDelete(WebhookDelivery, { webhookId: id });
      await tx.execute(`delete from webhook_retries where webhook_id = ?`, [id], 'run');
      await tx.nativeDelete(Webhook, { id: webhook.id });
    });
    await this.changed(id);
    await this.nats.jsm.streams.purge(this.nats.names.deliveriesStream, { filter: this.nats.names.delivery(id) }).catch(() => undefined);
  }

  async deliveries(auth: AuthContext, id: string, page: PageQuery): Promise<Page<WebhookDeliveryDto>> {
    await this.get(auth, id);
    return inSnapshot(this.em, (em) => this.readDeliveries(em, id, page));
  }

  private async readDeliveries(em: EntityManager, id: string, page: PageQuery): Promise<Page<WebhookDeliveryDto>> {
    const scope = { list: `webhook_deliveries:${id}`, secretsKey: this.config.secretsKey };
    const k = keysetClause(page, 'created_at_ms', 'id', scope);
    const rows = await em.execute<{ id: string }[]>(
      `select id from webhook_deliveries where webhook_id = ? and ${k.where} order by created_at_ms ${k.order}, id ${k.order} limit ${page.limit}`,
      [id, ...k.params],
    );
    const byId = new Map((await em.find(WebhookDelivery, { id: { $in: rows.map((r) => r.id) } })).map((d) => [d.id, d]));
    const total = await em.count(WebhookDelivery, { webhookId: id });
    const items = rows.map((r) => byId.get(r.id)!).filter(Boolean);
    return finishPage(items, page, k.order, total, (d) => ({ k: d.createdAtMs, id: d.id }), toDeliveryDto, (key) => signedCursor(key, scope));
  }

  /** The webhook and its routes are read again by the delivery apps. */
  private changed(id: string): Promise<void> {
    return announceRoutes(this.nats, 'webhooks', { listeners: [id] });
  }
}
