import { Controller, Get, Inject } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { Auth, AuthContext } from '../auth/auth.context';
import { AccountsService, utcDay } from './accounts.service';

@Controller('v1/users')
export class UsersController {
  constructor(private readonly em: EntityManager, @Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** The free form (orgs and daily quotas) or the paid form (billing period figures). */
  @Get('me')
  async me(@Auth() auth: AuthContext): Promise<{ data: Record<string, unknown> }> {
    const accounts = new AccountsService(this.em.fork());
    const user = await accounts.getUser(auth.userId);
    const now = new Date();
    const base = { id: user.id, username: user.username, email: user.email };
    if (user.plan === 'paid') {
      const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
      const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
      const used = await accounts.usage(user.id, utcDay(start), utcDay(now));
      return {
        data: {
          ...base,
          billing_period_start_ts: Math.floor(start.getTime() / 1000),
          billing_period_end_ts: Math.floor(end.getTime() / 1000),
          billing_period_invocations: used.invocations,
        },
      };
    }
    const today = utcDay(now);
    const used = await accounts.usage(user.id, today, today);
    const orgs = await accounts.orgsOf(user.id);
    return {
      data: {
        ...base,
        orgs: orgs.map((o) => ({ name: o.name, id: o.id, orgname: o.orgname, email: o.email })),
        daily_compute_time_quota: this.config.freeDailyComputeMsQuota,
        daily_compute_time_used: used.computeMs,
        daily_invocations_quota: this.config.freeDailyInvocationsQuota,
        daily_invocations_used: used.invocations,
      },
    };
  }
}
