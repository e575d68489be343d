import { Body, Controller, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { AppHookMeta, ComponentMeta } from '@app/component-model';
import { BadRequestError, clipped, ConflictError, InvocationMessage, newId, PayloadTooLargeError } from '@app/contracts';
import { Component, Source } from '@app/db';
import { NatsService } from '@app/nats';
import { assertPathResource, Auth, AuthContext, namespaceOf } from '../auth/auth.context';
import { mergeInput } from '../common/input';
import { COMPONENT_READER, ComponentReader } from '../components/component-reader';
import { runnableCode, WITHOUT_CODE } from '../components/components.service';
import { sandboxOf } from '../components/dynamic-props';
import { InvocationBacklog } from '../http-endpoints/invocation-backlog';

type HookBody = { event_name?: string; event: Record<string, unknown> };

/** Event names an error message lists (an `eventNames()` method may answer thousands). */
const LISTED_NAMES_MAX = 10;

function listNames(names: string[]): string {
  if (!names.length) return '(none)';
  const shown = names.slice(0, LISTED_NAMES_MAX).map((n) => JSON.stringify(n.length > 200 ? `${n.slice(0, 200)}…` : n));
  return `${shown.join(', ')}${names.length > LISTED_NAMES_MAX ? ` and ${names.length - LISTED_NAMES_MAX} more` : ''}`;
}

/**
 * Feeds `$.interface.apphook` sources (app_hooks.contract.ts). Event names of a hook whose
 * `eventNames` is a method are asked in the owner's sandbox with the source's props (no `$auth`),
 * like a prop's `options()`. Both routes answer 429 `backlog_full` while the owner has
 * INGEST_MAX_PENDING_PER_ACCOUNT invocations waiting, as manual runs do: unbounded, one account's
 * events to a slow source filled its partition's consumer and the partition's other sources stopped.
 */
@Controller('v1')
export class AppHooksController {
  constructor(
    private readonly em: EntityManager,
    private readonly nats: NatsService,
    private readonly backlog: InvocationBacklog,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(COMPONENT_READER) private readonly reader: ComponentReader,
  ) {}

  @Post('apps/:app/hook_events')
  @HttpCode(202)
  async channel(@Auth() auth: AuthContext, @Param('app') app: string, @Query() query: unknown, @Body() body: HookBody): Promise<{ data: { delivered: { source_id: string; invocation_id: string }[] } }> {
    // `org_id` is a common parameter: in the query string or the body (body wins), as on every POST.
    const owner = namespaceOf(auth, mergeInput(query, body).org_id);
    this.checkSize(body.event);
    this.backlog.assertAccountRoom(owner);
    const em = this.em.fork();
    const sources = await em.find(Source, { ownerId: owner, active: true, deletedAt: null }, { orderBy: { createdAtMs: 'asc' } });
    // Without their code (up to COMPONENT_MAX_BYTES each, for every source of the account): `eventNames` reads it when it calls the code.
    const components = new Map(((await em.find(Component, { id: { $in: [...new Set(sources.map((s) => s.componentId))] } }, WITHOUT_CODE)) as Component[]).map((c) => [c.id, c]));
    const delivered: { source_id: string; invocation_id: string }[] = [];
    for (const source of sources) {
      const component = components.get(source.componentId);
      const hooks = ((component?.meta as unknown as ComponentMeta | undefined)?.appHooks ?? []).filter((h) => h.app === app);
      if (!component || !hooks.length) continue;
      let listens = false;
      for (const hook of hooks) if (!listens) listens = (await this.eventNames(component, source, hook, owner)).includes(body.event_name as string);
      if (listens) delivered.push({ source_id: source.id, invocation_id: await this.deliver(source, body.event) });
    }
    return { data: { delivered } };
  }

  @Post('sources/:id/app_hook')
  @HttpCode(202)
  async one(@Auth() auth: AuthContext, @Param('id') id: string, @Body() body: HookBody): Promise<{ data: { source_id: string; invocation_id: string } }> {
    const em = this.em.fork();
    const source = assertPathResource(auth, await em.findOne(Source, { id, deletedAt: null }), 'source', id);
    if (!source.active) throw new ConflictError(`source ${id} is not active: activate it with PUT /v1/sources/${id} and "active": true`, { id });
    this.checkSize(body.event);
    const component = (await em.findOne(Component, { id: source.componentId }, WITHOUT_CODE)) as Component | null;
    const hooks = (component?.meta as unknown as ComponentMeta | undefined)?.appHooks ?? [];
    if (!component || !hooks.length) throw new BadRequestError(`source ${id} has no $.interface.apphook prop`, { id }, 'no_app_hook');
    this.backlog.assertAccountRoom(source.ownerId);
    if (body.event_name !== undefined) {
      const names = new Set<string>();
      for (const hook of hooks) for (const n of await this.eventNames(component, source, hook, sandboxOf(component, source.ownerId))) names.add(n);
      if (!names.has(body.event_name)) {
        throw new BadRequestError(`source ${id} does not listen to ${JSON.stringify(clipped(body.event_name))}; its event names are ${listNames([...names])}`, { event_name: clipped(body.event_name) }, 'unknown_event_name');
      }
    }
    return { data: { source_id: source.id, invocation_id: await this.deliver(source, body.event) } };
  }

  private checkSize(event: unknown): void {
    // Like a request to an HTTP source: an event over the HTTP body limit would not fit the invocation stream's messages.
    const bytes = Buffer.byteLength(JSON.stringify(event) ?? '');
    if (bytes > this.config.httpMaxBodyBytes) {
      throw new PayloadTooLargeError(`event is larger than ${this.config.httpMaxBodyBytes} bytes`, { bytes, limit_bytes: this.config.httpMaxBodyBytes });
    }
  }

  /**
   * The hook's event names: as written, or its `eventNames()` called in `owner`'s sandbox (the source's owner's; a
   * failure lists none), the component's code read for that call only.
   */
  private async eventNames(component: Component, source: Source, hook: AppHookMeta, owner: string): Promise<string[]> {
    if (hook.eventNames) return hook.eventNames;
    const apps = new Set(((component.meta as unknown as ComponentMeta).apps ?? []).map((a) => a.prop));
    const props = Object.fromEntries(Object.entries(source.configuredProps).filter(([k]) => !apps.has(k)));
    const out = await this.reader.options(await runnableCode(this.em.fork(), component), hook.prop, { page: 0, configuredProps: props }, this.config.componentReadTimeoutMs, owner);
    return out.error || !Array.isArray(out.options) ? [] : out.options.filter((n): n is string => typeof n === 'string');
  }

  private async deliver(source: Source, event: unknown): Promise<string> {
    const invocationId = newId('invocation');
    const msg: InvocationMessage = { invocationId, sourceId: source.id, kind: 'apphook', event, createdAtMs: Date.now() };
    await this.nats.publishInvocation(msg);
    return invocationId;
  }
}
