import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { ConfigurableProp } from '@app/component-model';
import { APP_CONFIG, AppConfig } from '@app/config';
import { BadRequestError, clipped, NotFoundError } from '@app/contracts';
import { Auth, AuthContext, namespaceOf } from '../auth/auth.context';
import { Input, mergeInput, missingIn, objectParam, optionalString } from '../common/input';
import { COMPONENT_READER, ComponentReader } from './component-reader';
import { componentUrlParam } from './component-url';
import { RegistrySeeder } from './registry.seeder';
import { ComponentDto, ComponentsService, runnableCode, toComponentDto } from './components.service';
import { unmaskInput } from '../sources/source-props';
import { hasDynamicProps, hiddenIn, propsBaseOf, reloadProps } from './dynamic-props';

@Controller('v1/components')
export class ComponentsController {
  constructor(
    private readonly components: ComponentsService,
    @Inject(COMPONENT_READER) private readonly reader: ComponentReader,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly seeder: RegistrySeeder,
    private readonly em: EntityManager,
  ) {}

  /** Saves a component from `component_code` and/or `component_url` (code wins; the URL is kept as metadata). */
  @Post()
  @HttpCode(200)
  async create(@Auth() auth: AuthContext, @Query() query: unknown, @Body() body: unknown): Promise<{ data: ComponentDto }> {
    const input = mergeInput(query, body);
    const ownerId = namespaceOf(auth, input.org_id);
    const code = optionalString(input, 'component_code', { maxLength: Number.MAX_SAFE_INTEGER }) ?? undefined;
    const url = componentUrlParam(input);
    const resolved = await this.components.resolveCode(ownerId, code, url, undefined, missingIn(query, body, ['component_code', 'component_url']));
    const c = await this.components.save(ownerId, auth.userId, resolved);
    return { data: toComponentDto(c) };
  }

  @Get('registry/:key')
  async registry(@Param('key') key: string, @Query() query: unknown): Promise<{ data: ComponentDto }> {
    try {
      return { data: toComponentDto(await this.components.findRegistry(key)) };
    } catch (e) {
      // Right after start the shipped registry may still be seeding: a 404 waits for it once.
      if (!(e instanceof NotFoundError) || this.seeder.status !== 'seeding') throw e;
      await this.seeder.settled(this.config.componentReadTimeoutMs * 2);
      return { data: toComponentDto(await this.components.findRegistry(key)) };
    }
  }

  @Get(':keyOrId')
  async get(@Auth() auth: AuthContext, @Param('keyOrId') keyOrId: string, @Query() query: unknown): Promise<{ data: ComponentDto }> {
    const input = query as Input;
    const namespace = namespaceOf(auth, input.org_id);
    return { data: toComponentDto(await this.components.findForCaller(auth, keyOrId, namespace)) };
  }

  /**
   * Extension: calls a prop's async `options({ page, prevContext })` (directly or
   * through its `propDefinition`) so clients can build forms; `this` holds the values given, a secret's mask as
   * the stored value of `source_id`'s source.
   */
  @Post(':keyOrId/props/:prop/options')
  @HttpCode(200)
  async options(@Auth() auth: AuthContext, @Param('keyOrId') keyOrId: string, @Param('prop') prop: string, @Query() query: unknown, @Body() body: unknown): Promise<{ data: { options: unknown[]; context: unknown } }> {
    const input = mergeInput(query, body);
    // Two names of one parameter: refused as a parameter given twice is, never one of the values picked.
    if (input.prevContext !== undefined && input.prev_context !== undefined) {
      throw new BadRequestError('prevContext and prev_context are one parameter: give one of them', { in: missingIn(query, body, ['prevContext', 'prev_context']), fields: ['prevContext', 'prev_context'] });
    }
    const namespace = namespaceOf(auth, input.org_id);
    // Its code is read only to call options() or additionalProps().
    const c = await this.components.findForCaller(auth, keyOrId, namespace, { code: false });
    const configured = objectParam(query, body, 'configured_props') ?? {};
    const given = typeof configured === 'object' && configured !== null && !Array.isArray(configured) ? (configured as Record<string, unknown>) : undefined;
    const base = await propsBaseOf(this.em, auth, c, namespace, optionalString(input, 'source_id') ?? undefined, this.config.secretsKey);
    // A prop that additionalProps() adds exists only for some values: it is found with the values given.
    const props = (hasDynamicProps(c) && given ? await reloadProps(this.reader, this.config, await this.components.withCode(c), given, base) : c.configurableProps) as ConfigurableProp[];
    const known = props.find((p) => p.name === prop);
    if (!known) throw new NotFoundError(`component ${c.id} has no prop ${clipped(prop)}`, { prop: clipped(prop) });
    const page = input.page === undefined ? 0 : Number(input.page);
    if (!Number.isInteger(page) || page < 0) throw new BadRequestError('page must be an integer ≥ 0', { field: 'page' });
    if (!given) throw new BadRequestError('configured_props must be an object', { field: 'configured_props' });
    if (!known.remoteOptions) return { data: { options: known.options ?? [], context: null } };
    // A secret's mask stands for the source's stored value (with `source_id`), as on an update; code quoting it in an error does not show it.
    const values = unmaskInput(props, given, base.stored);
    const optionsInput = { page, prevContext: input.prevContext ?? input.prev_context, configuredProps: values, previousProps: base.previous };
    const out = await this.reader.options(await runnableCode(this.em.fork(), c), prop, optionsInput, this.config.componentReadTimeoutMs, base.account);
    if (out.error) throw new BadRequestError(`options() of prop ${prop} failed: ${hiddenIn(props, values, String(out.error.message))}`, { prop }, 'options_failed');
    return { data: { options: out.options ?? [], context: out.context ?? null } };
  }

  /**
   * Extension, Pipedream's "reload props": the props a source of this component has for the values given
   * so far — its own, then those its `additionalProps()` returns (the same call a deploy makes; with
   * `source_id`, the call an update of that source makes: its previous props in `previousPropDefs`, its stored
   * secrets for their masks).
   */
  @Post(':keyOrId/props/reload')
  @HttpCode(200)
  async reload(@Auth() auth: AuthContext, @Param('keyOrId') keyOrId: string, @Query() query: unknown, @Body() body: unknown): Promise<{ data: { configurable_props: unknown[] } }> {
    const input = mergeInput(query, body);
    const namespace = namespaceOf(auth, input.org_id);
    const c = await this.components.findForCaller(auth, keyOrId, namespace, { code: false });
    const configured = objectParam(query, body, 'configured_props') ?? {};
    if (typeof configured !== 'object' || configured === null || Array.isArray(configured)) throw new BadRequestError('configured_props must be an object', { field: 'configured_props' });
    const base = await propsBaseOf(this.em, auth, c, namespace, optionalString(input, 'source_id') ?? undefined, this.config.secretsKey);
    const component = hasDynamicProps(c) ? await this.components.withCode(c) : c;
    return { data: { configurable_props: await reloadProps(this.reader, this.config, component, configured as Record<string, unknown>, base) } };
  }
}
