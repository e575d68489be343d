import { Controller, Get, Inject, Param, Query } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { BadRequestError, NotFoundError } from '@app/contracts';
import { Auth, AuthContext, namespaceOf } from '../auth/auth.context';
import { AccountsService, utcDay } from './accounts.service';
import { USAGE_DEFAULT_DAYS, USAGE_MAX_DAYS } from './accounts.contract';

export interface UsageDto {
  owner_id: string;
  from: string;
  to: string;
  daily_invocations_quota: number | null;
  daily_compute_time_quota: number | null;
  total_invocations: number;
  total_compute_time_ms: number;
  days: { day: string; invocations: number; compute_time_ms: number }[];
}

/** `days` of the query: 1–USAGE_MAX_DAYS, default USAGE_DEFAULT_DAYS (the contract has checked it; read from its text here). */
export function parseDays(query: Record<string, unknown> | undefined): number {
  const v = query?.days;
  if (v === undefined) return USAGE_DEFAULT_DAYS;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > USAGE_MAX_DAYS) throw new BadRequestError(`days must be an integer from 1 to ${USAGE_MAX_DAYS}`, { in: 'query', field: 'days', value: v });
  return n;
}

/** Usage per UTC day of the caller or of one of their orgs (extension: Pipedream's API has only today's figures). */
@Controller('v1')
export class UsageController {
  constructor(private readonly em: EntityManager, @Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** Your usage, or with `org_id` the org's (as `/orgs/{org_id}/usage`). */
  @Get('users/me/usage')
  async mine(@Auth() auth: AuthContext, @Query() query: Record<string, unknown>): Promise<{ data: UsageDto }> {
    const ownerId = namespaceOf(auth, query.org_id);
    // The free plan's daily quotas, as `GET /users/me` reports them; the paid plan has none, nor has an org.
    const free = ownerId === auth.userId && auth.plan === 'free';
    return { data: await this.usage(ownerId, parseDays(query), free ? this.config.freeDailyInvocationsQuota : null, free ? this.config.freeDailyComputeMsQuota : null) };
  }

  @Get('orgs/:org_id/usage')
  async ofOrg(@Auth() auth: AuthContext, @Param('org_id') orgId: string, @Query() query: Record<string, unknown>): Promise<{ data: UsageDto }> {
    if (!auth.orgIds.includes(orgId)) throw NotFoundError.of('org', orgId, 'org_id');
    // Orgs have no plan here, so no daily quota applies to them.
    return { data: await this.usage(orgId, parseDays(query), null, null) };
  }

  private async usage(ownerId: string, days: number, invocationsQuota: number | null, computeQuota: number | null): Promise<UsageDto> {
    const now = Date.now();
    const to = utcDay(new Date(now));
    const from = utcDay(new Date(now - (days - 1) * 86_400_000));
    const rows = await new AccountsService(this.em.fork()).usagePerDay(ownerId, from, to);
    return {
      owner_id: ownerId,
      from,
      to,
      daily_invocations_quota: invocationsQuota,
      daily_compute_time_quota: computeQuota,
      total_invocations: rows.reduce((n, r) => n + r.invocations, 0),
      total_compute_time_ms: rows.reduce((n, r) => n + r.computeMs, 0),
      days: rows.map((r) => ({ day: r.day, invocations: r.invocations, compute_time_ms: r.computeMs })),
    };
  }
}
