import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Query } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { clipped, ConflictError, InvocationMessage, newId, NotFoundError, PayloadTooLargeError } from '@app/contracts';
import { inSnapshot, Workflow } from '@app/db';
import { NatsService } from '@app/nats';
import { Auth, AuthContext, namespaceOf } from '../auth/auth.context';
import { mergeInput } from '../common/input';
import { ownedPage, Page, PageQuery, parsePageQuery } from '../common/pagination';
import { bytesBoundedPageSql, EXPANDED_PAGE_MAX_BYTES } from '../events/bytes-bounded-page';
import { InvocationBacklog } from '../http-endpoints/invocation-backlog';
import { WorkflowDto, WorkflowsService } from './workflows.service';

@Controller('v1')
export class WorkflowsController {
  constructor(
    private readonly workflows: WorkflowsService,
    private readonly em: EntityManager,
    private readonly nats: NatsService,
    private readonly backlog: InvocationBacklog,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  private async dto(w: Workflow): Promise<{ data: WorkflowDto }> {
    return { data: this.workflows.toDto(w, await this.workflows.componentsOf([w])) };
  }

  @Post('workflows')
  @HttpCode(200)
  async create(@Auth() auth: AuthContext, @Query() query: Record<string, unknown>, @Body() body: Record<string, unknown>): Promise<{ data: WorkflowDto }> {
    const ownerId = namespaceOf(auth, mergeInput(query, body).org_id);
    const { org_id: _org, include: _i, exclude: _e, ...definition } = body;
    return this.dto(await this.workflows.create(auth, ownerId, definition));
  }

  @Get('workflows/:id')
  async get(@Auth() auth: AuthContext, @Param('id') id: string): Promise<{ data: WorkflowDto }> {
    return this.dto(await this.workflows.get(auth, id));
  }

  @Put('workflows/:id')
  async update(@Auth() auth: AuthContext, @Param('id') id: string, @Body() body: Record<string, unknown>): Promise<{ data: WorkflowDto }> {
    const { org_id: _org, include: _i, exclude: _e, ...definition } = body;
    return this.dto(await this.workflows.update(auth, id, definition));
  }

  @Delete('workflows/:id')
  @HttpCode(204)
  async remove(@Auth() auth: AuthContext, @Param('id') id: string): Promise<void> {
    await this.workflows.remove(auth, id);
  }

  /** Your workflows, or with `org_id` the org's. */
  @Get('users/me/workflows')
  mine(@Auth() auth: AuthContext, @Query() query: Record<string, unknown>): Promise<Page<WorkflowDto>> {
    return this.list(namespaceOf(auth, query.org_id), query);
  }

  @Get('orgs/:org_id/workflows')
  ofOrg(@Auth() auth: AuthContext, @Param('org_id') orgId: string, @Query() query: Record<string, unknown>): Promise<Page<WorkflowDto>> {
    if (!auth.orgIds.includes(orgId)) throw NotFoundError.of('org', orgId, 'org_id');
    return this.list(orgId, query);
  }

  @Post('workflows/:id/run')
  @HttpCode(202)
  async run(@Auth() auth: AuthContext, @Param('id') id: string, @Body() body: unknown): Promise<{ data: { invocation_id: string } }> {
    const w = await this.workflows.get(auth, id);
    const input = (body ?? {}) as { event?: unknown };
    return { data: { invocation_id: await this.invoke(w, input.event !== undefined ? input.event : { timestamp: Math.floor(Date.now() / 1000), manual: true }) } };
  }

  /** Runs the workflow again with the `original_event` of one of its `$errors` events. */
  @Post('workflows/:id/replay')
  @HttpCode(202)
  async replay(@Auth() auth: AuthContext, @Param('id') id: string, @Body() body: { event_id: string }): Promise<{ data: { invocation_id: string } }> {
    const w = await this.workflows.get(auth, id);
    const [row] = (await this.em.getConnection().execute(`select event from event_summaries where emitter_id = ? and id = ? and channel_class = '$errors'`, [w.id, body.event_id])) as { event: { original_event?: unknown } }[];
    if (!row) throw new NotFoundError(`no $errors event ${body.event_id} of workflow ${clipped(id)}`, { id: clipped(id), event_id: body.event_id });
    return { data: { invocation_id: await this.invoke(w, row.event.original_event ?? null) } };
  }

  @Get('workflows/:id/runs')
  async runs(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: { limit?: string | number }): Promise<{ data: unknown[] }> {
    const w = await this.workflows.get(auth, id);
    const limit = Math.min(100, Math.max(1, Number(query.limit ?? 10) || 10));
    // The newest first, until they reach EXPANDED_PAGE_MAX_BYTES together (at least one), as a page of full events.
    const rows = (await this.em.getConnection().execute(
      bytesBoundedPageSql('event', `emitter_id = ? and channel_class = '$logs' and event ->> 'k' = 'run'`, 'desc', limit),
      [w.id, EXPANDED_PAGE_MAX_BYTES],
    )) as { event: { run?: unknown } }[];
    return { data: rows.map((r) => r.event.run).filter((r) => r !== undefined) };
  }

  private async invoke(w: Workflow, event: unknown): Promise<string> {
    if (!w.active) throw new ConflictError(`workflow ${w.id} is not active`, { id: w.id });
    const bytes = Buffer.byteLength(JSON.stringify(event) ?? '');
    if (bytes > this.config.httpMaxBodyBytes) {
      throw new PayloadTooLargeError(`event is larger than ${this.config.httpMaxBodyBytes} bytes`, { bytes, limit_bytes: this.config.httpMaxBodyBytes });
    }
    this.backlog.assertAccountRoom(w.ownerId);
    const invocationId = newId('invocation');
    const msg: InvocationMessage = { invocationId, sourceId: w.id, kind: 'manual', event, createdAtMs: Date.now() };
    await this.nats.publishInvocation(msg);
    return invocationId;
  }

  private async list(ownerId: string, query: Record<string, unknown>): Promise<Page<WorkflowDto>> {
    const page = parsePageQuery(query);
    return inSnapshot(this.em, (em) => this.readPage(em, ownerId, page));
  }

  private readPage(em: EntityManager, ownerId: string, page: PageQuery): Promise<Page<WorkflowDto>> {
    return ownedPage(em, { entity: Workflow, table: 'workflows', softDeleted: true }, ownerId, page, this.config.secretsKey, async (rows) => {
      const components = await this.workflows.componentsOf(rows);
      return (w) => this.workflows.toDto(w, components);
    });
  }
}
