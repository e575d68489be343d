import { Type } from '@sinclair/typebox';
import { orgTwinOf, RouteContract } from '../contract/route-contract';
import { Data, Id, NullableString, PAGE_QUERY, PageOf, Timestamp } from '../contract/schemas';

export const Webhook = Type.Object(
  {
    id: Id('wh_…'),
    user_id: Type.String(),
    name: Type.Union([Type.String(), Type.Null()]),
    description: Type.Union([Type.String(), Type.Null()]),
    url: Type.String({ description: 'as written, its user info and the values of query parameters named like credentials (token, key, secret, password, auth, sig…) as ********' }),
    active: Type.Boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
    disabled_reason: Type.Optional(Type.String({ description: 'extension: why the service disabled it (a 410)' })),
    secret: Type.Optional(Type.String({ description: 'extension: the whsec_… signing secret, in the create response only' })),
  },
  { additionalProperties: false },
);

export const WebhookDelivery = Type.Object(
  {
    id: Type.String(),
    event_id: Type.String(),
    emitter_id: Type.String(),
    attempt: Type.Integer(),
    status: Type.String(),
    response_code: Type.Union([Type.Integer(), Type.Null()]),
    latency_ms: Type.Union([Type.Integer(), Type.Null()]),
    response_body: Type.Union([Type.String(), Type.Null()]),
    error: Type.Union([Type.String(), Type.Null()]),
    next_attempt_at_ms: Type.Union([Type.Integer(), Type.Null()]),
    created_at_ms: Type.Integer(),
  },
  { additionalProperties: false },
);

const WebhookId = Type.Object({ id: Id('wh_…') });
const TEXT = { name: Type.Optional(NullableString(255)), description: Type.Optional(NullableString(2000)) };
const Url = Type.String({ maxLength: 2048, description: 'absolute http(s) URL' });

export const WEBHOOK_ROUTES: RouteContract[] = [
  {
    method: 'POST',
    path: '/v1/webhooks',
    tag: 'webhooks',
    summary: 'Create a webhook (the response carries its signing secret, once)',
    body: Type.Object({ url: Url, ...TEXT }),
    responses: { 200: Data(Webhook) },
    errors: [403, 404],
  },
  { method: 'GET', path: '/v1/users/me/webhooks', tag: 'webhooks', summary: 'Your webhooks', description: orgTwinOf('GET /orgs/{org_id}/webhooks'), query: Type.Object(PAGE_QUERY), responses: { 200: PageOf(Webhook) } },
  {
    method: 'GET',
    path: '/v1/orgs/{org_id}/webhooks',
    tag: 'webhooks',
    extension: true,
    summary: "An org's webhooks",
    params: Type.Object({ org_id: Id('o_…') }),
    query: Type.Object(PAGE_QUERY),
    responses: { 200: PageOf(Webhook) },
    errors: [404],
  },
  { method: 'GET', path: '/v1/webhooks/{id}', tag: 'webhooks', extension: true, summary: 'One webhook', params: WebhookId, responses: { 200: Data(Webhook) }, errors: [404] },
  {
    method: 'PUT',
    path: '/v1/webhooks/{id}',
    tag: 'webhooks',
    extension: true,
    summary: 'Change url, name, description or active',
    params: WebhookId,
    body: Type.Object({ url: Type.Optional(Url), ...TEXT, active: Type.Optional(Type.Boolean()) }),
    responses: { 200: Data(Webhook) },
    errors: [404],
  },
  { method: 'DELETE', path: '/v1/webhooks/{id}', tag: 'webhooks', extension: true, summary: 'Delete a webhook', params: WebhookId, responses: { 204: null }, errors: [404] },
  {
    method: 'GET',
    path: '/v1/webhooks/{id}/deliveries',
    tag: 'webhooks',
    extension: true,
    summary: 'Every delivery attempt of a webhook, newest first',
    params: WebhookId,
    query: Type.Object(PAGE_QUERY),
    responses: { 200: PageOf(WebhookDelivery) },
    errors: [404],
  },
];
