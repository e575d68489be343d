import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { Inject } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { ConflictError, InvocationMessage, newId, PayloadTooLargeError } from '@app/contracts';
import { Component, Source } from '@app/db';
import { addedTimerProp, readTimerSchedule, timerEvent } from '@app/component-model';
import { NatsService } from '@app/nats';
import { assertPathResource, Auth, AuthContext } from '../auth/auth.context';
import { InvocationBacklog } from './invocation-backlog';

/**
 * `POST /v1/sources/{id}/run` (an extension): runs a source now. The optional
 * body `{ "event": {...} }` is passed to `run`; by default a timer source gets
 * the event its timer would pass (`{ timestamp, interval_seconds }` or
 * `{ timestamp, cron }`), any other source `{ timestamp: <epoch s>, manual: true }`.
 * Answers 202 once the invocation is stored; 429 `backlog_full` (scope `account`) while the owner's
 * sources and workflows have INGEST_MAX_PENDING_PER_ACCOUNT invocations waiting, so runs queued by hand
 * cannot grow the invocation stream without bound.
 */
@Controller('v1')
export class ManualRunController {
  constructor(
    private readonly em: EntityManager,
    private readonly nats: NatsService,
    private readonly backlog: InvocationBacklog,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post('sources/:id/run')
  @HttpCode(202)
  async run(@Auth() auth: AuthContext, @Param('id') id: string, @Body() body: unknown): Promise<{ data: { invocation_id: string } }> {
    const source = assertPathResource(auth, await this.em.fork().findOne(Source, { id, deletedAt: null }), 'source', id);
    if (!source.active) throw new ConflictError(`source ${id} is not active: activate it with PUT /v1/sources/${id} and "active": true`, { id });
    // The route's contract (sources.contract.ts) has checked the body: absent, or an object with `event` only.
    const input = (body ?? {}) as { event?: unknown };
    // Like a request to an HTTP source: an event over the HTTP body limit would not fit the invocation stream's messages.
    const eventBytes = input.event === undefined ? 0 : Buffer.byteLength(JSON.stringify(input.event) ?? '');
    if (eventBytes > this.config.httpMaxBodyBytes) {
      throw new PayloadTooLargeError(`event is larger than ${this.config.httpMaxBodyBytes} bytes`, { bytes: eventBytes, limit_bytes: this.config.httpMaxBodyBytes });
    }
    this.backlog.assertAccountRoom(source.ownerId);
    const invocationId = newId('invocation');
    const msg: InvocationMessage = {
      invocationId,
      sourceId: source.id,
      kind: 'manual',
      event: input.event !== undefined ? input.event : await this.defaultEvent(source),
      createdAtMs: Date.now(),
    };
    await this.nats.publishInvocation(msg);
    return { data: { invocation_id: invocationId } };
  }

  private async defaultEvent(source: Source): Promise<Record<string, unknown>> {
    const now = Date.now();
    const component = await this.em.fork().findOne(Component, { id: source.componentId });
    const timerProp = (component?.meta.timerProps as string[] | undefined)?.[0] ?? addedTimerProp(source.additionalProps);
    if (component && timerProp) {
      const declared = (component.configurableProps as { name: string; default?: unknown }[]).find((p) => p.name === timerProp);
      const spec = readTimerSchedule(source.configuredProps[timerProp]) ?? readTimerSchedule(declared?.default);
      if (spec) return timerEvent(spec, now);
    }
    return { timestamp: Math.floor(now / 1000), manual: true };
  }
}
