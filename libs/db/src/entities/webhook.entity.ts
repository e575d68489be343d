import { Entity, Index, PrimaryKey, Property } from '@mikro-orm/core';
import { BigNumber, nowSeconds } from './common';

@Entity({ tableName: 'webhooks' })
@Index({ properties: ['ownerId', 'createdAtMs', 'id'] })
export class Webhook {
  @PrimaryKey({ type: 'string' }) id!: string;
  @Property({ type: 'string' }) ownerId!: string;
  @Property({ type: 'string' }) userId!: string;
  @Property({ type: 'text', nullable: true }) name?: string | null;
  @Property({ type: 'text', nullable: true }) description?: string | null;
  /** The url as the API shows it: its user info and credential-named query values as `********` (credentialsMasked). */
  @Property({ type: 'text' }) url!: string;
  /** The url as given, encrypted (`{ "$enc": … }`); null only on rows saved before it existed, until the api seals them. */
  @Property({ type: 'json', nullable: true }) urlSealed?: Record<string, unknown> | null;
  @Property({ type: 'boolean' }) active = true;
  /** The `whsec_…` signing secret, encrypted (`{ "$enc": … }`). */
  @Property({ type: 'json' }) secret!: Record<string, unknown>;
  @Property({ type: 'text', nullable: true }) disabledReason?: string | null;
  @Property({ type: BigNumber }) createdAtMs: number = Date.now();
  @Property({ type: BigNumber }) createdAt: number = nowSeconds();
  @Property({ type: BigNumber, onUpdate: () => nowSeconds() }) updatedAt: number = nowSeconds();
}

/** One attempt to deliver one event to one webhook. */
@Entity({ tableName: 'webhook_deliveries' })
@Index({ properties: ['webhookId', 'createdAtMs'] })
@Index({ properties: ['webhookId', 'eventId'] })
export class WebhookDelivery {
  @PrimaryKey({ type: 'string' }) id!: string;
  @Property({ type: 'string' }) webhookId!: string;
  @Property({ type: 'string' }) eventId!: string;
  @Property({ type: 'string' }) emitterId!: string;
  @Property({ type: 'integer' }) attempt = 1;
  /** `succeeded`, `failed` (will retry), `exhausted`, `disabled`. */
  @Property({ type: 'string' }) status!: string;
  @Property({ type: 'integer', nullable: true }) responseCode?: number | null;
  @Property({ type: 'integer', nullable: true }) latencyMs?: number | null;
  @Property({ type: 'text', nullable: true }) responseBody?: string | null;
  @Property({ type: 'text', nullable: true }) error?: string | null;
  @Property({ type: BigNumber, nullable: true }) nextAttemptAtMs?: number | null;
  @Property({ type: BigNumber }) createdAtMs: number = Date.now();
}
