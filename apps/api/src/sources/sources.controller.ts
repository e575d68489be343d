import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Query } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError } from '@app/contracts';
import { Component, inSnapshot, Source } from '@app/db';
import { Auth, AuthContext, namespaceOf } from '../auth/auth.context';
import { Input, mergeInput, missingIn, objectParam, optionalBoolean, optionalString } from '../common/input';
import { ownedPage, Page, PageQuery, parsePageQuery } from '../common/pagination';
import { componentUrlParam } from '../components/component-url';
import { ComponentRef, SourceDto, SourcesService } from './sources.service';

const MAX = Number.MAX_SAFE_INTEGER;

function componentRef(query: unknown, body: unknown): ComponentRef {
  const input = mergeInput(query, body);
  return {
    componentId: optionalString(input, 'component_id') || undefined,
    code: optionalString(input, 'component_code', { maxLength: MAX }) || undefined,
    url: componentUrlParam(input),
    key: optionalString(input, 'key', { maxLength: 255 }) || undefined,
    missingIn: missingIn(query, body, ['component_id', 'component_code', 'component_url', 'key']),
  };
}

function sourceName(input: Input): string | undefined {
  const name = optionalString(input, 'name', { maxLength: 200 });
  return name === undefined || name === null || name.trim() === '' ? undefined : name.trim();
}

@Controller('v1')
export class SourcesController {
  constructor(
    private readonly sources: SourcesService,
    private readonly em: EntityManager,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post('sources')
  @HttpCode(200)
  async create(@Auth() auth: AuthContext, @Query() query: unknown, @Body() body: unknown): Promise<{ data: SourceDto }> {
    const input = mergeInput(query, body);
    const ownerId = namespaceOf(auth, input.org_id);
    const { source, component } = await this.sources.create(auth, ownerId, componentRef(query, body), sourceName(input), objectParam(query, body, 'configured_props'));
    return { data: this.sources.toDto(source, component, true) };
  }

  /** Extension: one source by id (members of its org included). */
  @Get('sources/:id')
  async get(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: unknown): Promise<{ data: SourceDto }> {
    const { source, component } = await this.sources.get(auth, id);
    return { data: this.sources.toDto(source, component, true) };
  }

  @Put('sources/:id')
  async update(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: unknown, @Body() body: unknown): Promise<{ data: SourceDto }> {
    const input = mergeInput(query, body);
    const { source, component } = await this.sources.update(auth, id, {
      ref: componentRef(query, body),
      name: sourceName(input),
      configuredProps: objectParam(query, body, 'configured_props'),
      active: optionalBoolean(input, 'active') ?? true,
    });
    return { data: this.sources.toDto(source, component, true) };
  }

  @Delete('sources/:id')
  @HttpCode(204)
  async remove(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: unknown): Promise<void> {
    await this.sources.remove(auth, id);
  }

  /** Your sources, or with `org_id` (a common parameter) the org's, as `/orgs/{org_id}/sources` lists them. */
  @Get('users/me/sources')
  async mine(@Auth() auth: AuthContext, @Query() query: Record<string, unknown>): Promise<Page<SourceDto>> {
    return this.list(namespaceOf(auth, query.org_id), query);
  }

  @Get('orgs/:org_id/sources')
  async ofOrg(@Auth() auth: AuthContext, @Param('org_id') orgId: string, @Query() query: Record<string, unknown>): Promise<Page<SourceDto>> {
    if (!auth.orgIds.includes(orgId)) throw NotFoundError.of('org', orgId, 'org_id');
    return this.list(orgId, query);
  }

  /** Newest first, keyset-paginated on (created_at_ms, id): cursors survive inserts between pages. */
  private async list(ownerId: string, query: Record<string, unknown>): Promise<Page<SourceDto>> {
    const page = parsePageQuery(query);
    return inSnapshot(this.em, (em) => this.readPage(em, ownerId, page));
  }

  private readPage(em: EntityManager, ownerId: string, page: PageQuery): Promise<Page<SourceDto>> {
    return ownedPage(em, { entity: Source, table: 'sources', softDeleted: true }, ownerId, page, this.config.secretsKey, async (rows) => {
      // What an answer shows of a component (its props, whether it adds some), not its code: 100 sources of as many components of up to COMPONENT_MAX_BYTES were read whole for every page.
      const components = rows.length ? ((await em.find(Component, { id: { $in: [...new Set(rows.map((s) => s.componentId))] } }, { fields: ['id', 'configurableProps', 'meta'] })) as Component[]) : [];
      const compById = new Map(components.map((c) => [c.id, c]));
      return (s) => this.sources.toDto(s, compById.get(s.componentId), false);
    });
  }
}
