import { Entity, Index, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { BigNumber, nowSeconds } from './common';

export type Plan = 'free' | 'paid';

@Entity({ tableName: 'users' })
export class User {
  @PrimaryKey({ type: 'string' }) id!: string;
  @Property({ type: 'string' }) @Unique() username!: string;
  @Property({ type: 'string' }) email!: string;
  @Property({ type: 'string' }) plan: Plan = 'free';
  @Property({ type: BigNumber }) createdAt: number = nowSeconds();
  @Property({ type: BigNumber, onUpdate: () => nowSeconds() }) updatedAt: number = nowSeconds();
}

@Entity({ tableName: 'api_keys' })
export class ApiKey {
  @PrimaryKey({ type: 'string' }) id!: string;
  @Property({ type: 'string', index: true }) userId!: string;
  @Property({ type: 'string' }) @Unique() keyHash!: string;
  @Property({ type: BigNumber }) createdAt: number = nowSeconds();
  @Property({ type: BigNumber, nullable: true }) revokedAt?: number | null;
}

@Entity({ tableName: 'orgs' })
export class Org {
  @PrimaryKey({ type: 'string' }) id!: string;
  @Property({ type: 'string' }) name!: string;
  @Property({ type: 'string' }) @Unique() orgname!: string;
  @Property({ type: 'string' }) email!: string;
  @Property({ type: BigNumber }) createdAt: number = nowSeconds();
}

@Entity({ tableName: 'org_members' })
@Index({ properties: ['userId'] })
export class OrgMember {
  @PrimaryKey({ type: 'string' }) orgId!: string;
  @PrimaryKey({ type: 'string' }) userId!: string;
  @Property({ type: BigNumber }) createdAt: number = nowSeconds();
}

/** Invocations and compute time per owner and UTC day (quota figures of `/users/me`). */
@Entity({ tableName: 'usage_daily' })
export class UsageDaily {
  @PrimaryKey({ type: 'string' }) ownerId!: string;
  @PrimaryKey({ type: 'string' }) day!: string;
  @Property({ type: BigNumber }) invocations = 0;
  @Property({ type: BigNumber }) computeMs = 0;
}

/**
 * A USAGE record already counted into `usage_daily` (by invocation id): makes
 * counting idempotent. Kept while its stream sequence may still be redelivered.
 */
@Entity({ tableName: 'usage_seen' })
export class UsageSeen {
  @PrimaryKey({ type: 'string' }) invocationId!: string;
  @Index() @Property({ type: BigNumber }) streamSeq!: number;
  @Index() @Property({ type: BigNumber }) createdAtMs: number = Date.now();
}
