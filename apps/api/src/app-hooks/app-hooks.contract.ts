import { Type } from '@sinclair/typebox';
import { RouteContract } from '../contract/route-contract';
import { Data, Id } from '../contract/schemas';

const HookEvent = Type.Object({}, { additionalProperties: true, description: 'the event passed to run(), as the app sends it' });
const Delivered = Type.Object({ source_id: Type.String(), invocation_id: Type.String() }, { additionalProperties: false });

/**
 * `$.interface.apphook` sources listen to an app's managed webhook. A self-hosted service has no
 * managed webhooks of its own, so the events come in through these two extensions.
 */
export const APP_HOOK_ROUTES: RouteContract[] = [
  {
    method: 'POST',
    path: '/v1/apps/{app}/hook_events',
    tag: 'sources',
    extension: true,
    summary: "Post an event to an app's hook channel",
    description:
      'Runs every active source of yours (or of `org_id`) that has a `$.interface.apphook` prop on an app prop of this app and whose ' +
      '`eventNames` (static, or its `eventNames()` method with the source\'s props) include `event_name`, with `event` as the event. Each run is stored as an invocation before the 202. ' +
      '429 `backlog_full` (scope `account`) while the account has INGEST_MAX_PENDING_PER_ACCOUNT invocations waiting.',
    params: Type.Object({ app: Type.String({ pattern: '^[a-z0-9_]+$', 'x-expected': 'an app slug of lowercase letters, digits and _ (github, google_sheets)', maxLength: 100, description: 'app slug (slack, github…)' }) }),
    bodyOnly: true,
    bodyRequired: true,
    body: Type.Object({ event_name: Type.String({ minLength: 1, maxLength: 200 }), event: HookEvent }),
    responses: { 202: Data(Type.Object({ delivered: Type.Array(Delivered) })) },
    errors: [404, 413],
  },
  {
    method: 'POST',
    path: '/v1/sources/{id}/app_hook',
    tag: 'sources',
    extension: true,
    summary: "Post an app hook event to one source",
    description: "Runs the source's run() with `event`, as its app's webhook would; the source must have a `$.interface.apphook` prop. `event_name`, when given, must be one of its event names. 429 `backlog_full` (scope `account`) while the account has INGEST_MAX_PENDING_PER_ACCOUNT invocations waiting.",
    params: Type.Object({ id: Id('dc_…') }),
    bodyOnly: true,
    bodyRequired: true,
    body: Type.Object({ event_name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), event: HookEvent }),
    responses: { 202: Data(Delivered) },
    errors: [404, 409, 413],
  },
];
