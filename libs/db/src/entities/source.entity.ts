import { Entity, Index, PrimaryKey, Property } from '@mikro-orm/core';
import { BigNumber, nowSeconds } from './common';

/** A deployed component (`dc_…`). */
@Entity({ tableName: 'sources' })
@Index({ properties: ['ownerId', 'createdAtMs', 'id'] })
export class Source {
  @PrimaryKey({ type: 'string' }) id!: string;
  @Property({ type: 'string' }) ownerId!: string;
  @Property({ type: 'string' }) userId!: string;
  @Property({ type: 'string' }) componentId!: string;
  @Property({ type: 'string' }) name!: string;
  @Property({ type: 'string' }) nameSlug!: string;
  /** Values per prop as stored: secrets and `$auth` encrypted. */
  @Property({ type: 'json' }) configuredProps: Record<string, unknown> = {};
  /** `configurable_props` that the component's `additionalProps()` returned for this source's values (null: none). */
  @Property({ type: 'json', nullable: true }) additionalProps?: Record<string, unknown>[] | null;
  @Property({ type: 'boolean' }) active = true;
  /** Moves on every change; `publishedRev` is the last revision put into NATS KV. */
  @Property({ type: 'integer' }) rev = 1;
  @Property({ type: 'integer' }) publishedRev = 0;
  @Property({ type: 'string', nullable: true, unique: true }) endpointKey?: string | null;
  @Property({ type: 'integer', nullable: true }) runTimeoutMs?: number | null;
  @Property({ type: BigNumber }) createdAtMs: number = Date.now();
  @Property({ type: BigNumber }) createdAt: number = nowSeconds();
  @Property({ type: BigNumber, onUpdate: () => nowSeconds() }) updatedAt: number = nowSeconds();
  /** Set on delete; the reconciler removes the desired state, then the row. */
  @Property({ type: BigNumber, nullable: true }) deletedAt?: number | null;
}
