import { Type } from '@sinclair/typebox';
import { orgTwinOf, RouteContract } from '../contract/route-contract';
import { Data, Id } from '../contract/schemas';

export const Subscription = Type.Object(
  { id: Type.String(), emitter_id: Type.String(), listener_id: Type.String(), event_name: Type.String() },
  { additionalProperties: false },
);

const Channel = Type.String({ maxLength: 255, description: '"" (default channel), a custom name, $errors or $logs' });
const FIELDS = {
  emitter_id: Type.String({ maxLength: 255, description: 'dc_…, p_…, or the globs dc_* / p_*' }),
  listener_id: Type.String({ maxLength: 255, description: 'dc_…, p_… or wh_…' }),
};

export const SUBSCRIPTION_ROUTES: RouteContract[] = [
  {
    method: 'POST',
    path: '/v1/subscriptions',
    tag: 'subscriptions',
    summary: "Route an emitter's channel to a listener (idempotent)",
    body: Type.Object({ ...FIELDS, event_name: Type.Optional(Channel) }),
    responses: { 200: Data(Subscription) },
    errors: [403, 404],
  },
  {
    method: 'DELETE',
    path: '/v1/subscriptions',
    tag: 'subscriptions',
    summary: 'Delete a subscription (event_name is required: empty for the default channel)',
    body: Type.Object({ ...FIELDS, event_name: Channel }),
    responses: { 204: null },
    errors: [404],
  },
  {
    method: 'POST',
    path: '/v1/auto_subscriptions',
    tag: 'subscriptions',
    summary: "Subscribe a listener to $errors or $logs of the owner's sources and workflows created from now on",
    description: 'Existing sources and workflows are not subscribed: use POST /subscriptions for them.',
    body: Type.Object({ event_name: Type.Union([Type.Literal('$errors'), Type.Literal('$logs')]), listener_id: FIELDS.listener_id }),
    responses: { 200: Data(Type.Object({ id: Type.String(), event_name: Type.String(), listener_id: Type.String() })) },
    errors: [403, 404],
  },
  { method: 'GET', path: '/v1/users/me/subscriptions', tag: 'subscriptions', summary: 'Your subscriptions', description: orgTwinOf('GET /orgs/{org_id}/subscriptions'), responses: { 200: Type.Object({ data: Type.Array(Subscription) }) } },
  // The same list under Pipedream's newer name for orgs, workspaces.
  ...[
    ['/v1/orgs/{org_id}/subscriptions', "An org's subscriptions"],
    ['/v1/workspaces/{org_id}/subscriptions', "An org's subscriptions (Pipedream's workspace path; the same list as /v1/orgs/{org_id}/subscriptions)"],
  ].map(
    ([path, summary]): RouteContract => ({
      method: 'GET',
      path,
      tag: 'subscriptions',
      summary,
      params: Type.Object({ org_id: Id('o_…') }),
      responses: { 200: Type.Object({ data: Type.Array(Subscription) }) },
      errors: [404],
    }),
  ),
];
