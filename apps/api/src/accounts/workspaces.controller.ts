import { Controller, Get, Param, Query } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError } from '@app/contracts';
import { Org } from '@app/db';
import { Auth, AuthContext } from '../auth/auth.context';
import { AccountsService } from './accounts.service';

export interface WorkspaceDto {
  id: string;
  orgname: string;
  name: string;
  email: string;
}

/**
 * Pipedream's workspace reads: "Get a Workspace" (an org the caller is a member of; any other id answers
 * 404, as every org route) and "Get Current User's Workspaces".
 */
@Controller('v1')
export class WorkspacesController {
  constructor(private readonly em: EntityManager) {}

  @Get('users/me/workspaces')
  async mine(@Auth() auth: AuthContext, @Query() query: unknown): Promise<{ data: { id: string; orgname: string; name: string }[] }> {
    const orgs = await new AccountsService(this.em.fork()).orgsOf(auth.userId);
    return { data: orgs.map((o) => ({ id: o.id, orgname: o.orgname, name: o.name })) };
  }

  @Get('workspaces/:org_id')
  async get(@Auth() auth: AuthContext, @Param('org_id') orgId: string, @Query() query: unknown): Promise<{ data: WorkspaceDto }> {
    const org = auth.orgIds.includes(orgId) ? await this.em.fork().findOne(Org, { id: orgId }) : null;
    if (!org) throw NotFoundError.of('org', orgId, 'org_id');
    return { data: { id: org.id, orgname: org.orgname, name: org.name, email: org.email } };
  }
}
