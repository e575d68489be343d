import { Entity, Index, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { BigNumber, nowSeconds } from './common';

@Entity({ tableName: 'subscriptions' })
@Unique({ properties: ['ownerId', 'emitterId', 'listenerId', 'eventName'] })
@Index({ properties: ['ownerId', 'createdAtMs', 'id'] })
export class Subscription {
  @PrimaryKey({ type: 'string' }) id!: string;
  @Property({ type: 'string' }) ownerId!: string;
  /** An id (`dc_…`, `p_…`) or a glob (`dc_*`, `p_*`) covering the owner's emitters. */
  @Property({ type: 'string', index: true }) emitterId!: string;
  @Property({ type: 'string', index: true }) listenerId!: string;
  @Property({ type: 'string' }) eventName = '';
  /**
   * The user who made it with POST /subscriptions, or who made the auto-subscription that gave it to a new source or
   * workflow (null: a workflow trigger, or made before this was recorded).
   */
  @Property({ type: 'string', nullable: true }) createdBy?: string | null = null;
  /** Orders the subscription lists (oldest first) within a second. */
  @Property({ type: BigNumber }) createdAtMs: number = Date.now();
  @Property({ type: BigNumber }) createdAt: number = nowSeconds();
}

@Entity({ tableName: 'auto_subscriptions' })
@Unique({ properties: ['ownerId', 'listenerId', 'eventName'] })
export class AutoSubscription {
  @PrimaryKey({ type: 'string' }) id!: string;
  @Property({ type: 'string' }) ownerId!: string;
  @Index() @Property({ type: 'string' }) listenerId!: string;
  @Property({ type: 'string' }) eventName!: string;
  /** The user who made it (last): the subscriptions it gives record them (null: made before this was recorded). */
  @Property({ type: 'string', nullable: true }) createdBy?: string | null = null;
  @Property({ type: BigNumber }) createdAt: number = nowSeconds();
}
