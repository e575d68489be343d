import { Type } from '@sinclair/typebox';
import { orgTwinOf, RouteContract } from '../contract/route-contract';
import { Data, EventIdText, Expand, Id, PAGE_QUERY, PageOf, Timestamp } from '../contract/schemas';

export const WorkflowSchema = Type.Object(
  {
    id: Id('p_…'),
    owner_id: Type.String({ description: 'u_… or o_…' }),
    user_id: Type.String({ description: 'who created it' }),
    name: Type.String(),
    active: Type.Boolean(),
    deployment_id: Type.String({ description: 'd_… of the last deploy' }),
    trigger: Type.Object({}, { additionalProperties: true, description: 'the trigger as defined; an HTTP trigger adds endpoint_url' }),
    steps: Type.Array(
      Type.Object({
        name: Type.String(),
        cell_id: Type.String({ description: 'c_…' }),
        component_id: Type.String({ description: 'sc_… the step runs' }),
        code: Type.Optional(Type.Literal(true)),
        action: Type.Optional(Type.String()),
        props: Type.Record(Type.String(), Type.Unknown(), { description: 'configured props, secret ones masked' }),
      }),
    ),
    settings: Type.Object({}, { additionalProperties: true }),
    secrets: Type.Array(Type.String(), { description: 'names of the secrets set; values are never returned' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { additionalProperties: false },
);

const Definition = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  trigger: Type.Object({}, { additionalProperties: true, description: 'one of http, timer, source, events, manual (docs/workflows.md)' }),
  steps: Type.Array(Type.Object({}, { additionalProperties: true }), { minItems: 1, maxItems: 50, description: 'ordered steps: { name, code | action, props? }' }),
  settings: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'concurrency, throttle { limit, period_seconds }, timeout_seconds' })),
  secrets: Type.Optional(Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()]), { description: 'NAME: value (stored encrypted; null removes one)' })),
  active: Type.Optional(Type.Boolean({ description: 'default true' })),
};
const WorkflowId = Type.Object({ id: Id('p_…') });
const RunRecord = Type.Object({}, { additionalProperties: true, description: 'id, status, started_at, duration_ms, deployment_id, failed_step, steps[]' });

export const WORKFLOW_ROUTES: RouteContract[] = [
  { method: 'POST', path: '/v1/workflows', tag: 'workflows', extension: true, summary: 'Create a workflow from a definition', bodyOnly: true, bodyRequired: true, body: Type.Object(Definition), responses: { 200: Data(WorkflowSchema) }, errors: [403, 404, 409, 413] },
  { method: 'GET', path: '/v1/workflows/{id}', tag: 'workflows', extension: true, summary: 'One workflow', params: WorkflowId, responses: { 200: Data(WorkflowSchema) }, errors: [404] },
  { method: 'PUT', path: '/v1/workflows/{id}', tag: 'workflows', extension: true, summary: 'Deploy a new definition of a workflow (a new d_…)', params: WorkflowId, bodyOnly: true, bodyRequired: true, body: Type.Object(Definition), responses: { 200: Data(WorkflowSchema) }, errors: [404, 409, 413] },
  { method: 'DELETE', path: '/v1/workflows/{id}', tag: 'workflows', extension: true, summary: 'Delete a workflow', params: WorkflowId, responses: { 204: null }, errors: [404] },
  { method: 'GET', path: '/v1/users/me/workflows', tag: 'workflows', extension: true, summary: 'Your workflows, newest first', description: orgTwinOf('GET /orgs/{org_id}/workflows'), query: Type.Object(PAGE_QUERY), responses: { 200: PageOf(WorkflowSchema) } },
  { method: 'GET', path: '/v1/orgs/{org_id}/workflows', tag: 'workflows', extension: true, summary: "An org's workflows, newest first", params: Type.Object({ org_id: Id('o_…') }), query: Type.Object(PAGE_QUERY), responses: { 200: PageOf(WorkflowSchema) }, errors: [404] },
  {
    method: 'POST',
    path: '/v1/workflows/{id}/run',
    tag: 'workflows',
    extension: true,
    summary: 'Run a workflow now with an event',
    params: WorkflowId,
    bodyOnly: true,
    body: Type.Object({ event: Type.Optional(Type.Unknown({ description: 'steps.trigger.event (default { timestamp, manual: true })' })) }),
    responses: { 202: Data(Type.Object({ invocation_id: Type.String() })) },
    errors: [404, 409, 413],
  },
  {
    method: 'POST',
    path: '/v1/workflows/{id}/replay',
    tag: 'workflows',
    extension: true,
    summary: "Run a workflow again with a failed run's original_event",
    description: 'event_id is the id of one of the workflow\'s $errors events.',
    params: WorkflowId,
    bodyOnly: true,
    bodyRequired: true,
    body: Type.Object({ event_id: EventIdText("one of the workflow's $errors event ids") }),
    responses: { 202: Data(Type.Object({ invocation_id: Type.String() })) },
    errors: [404, 409],
  },
  {
    method: 'GET',
    path: '/v1/workflows/{id}/runs',
    tag: 'workflows',
    extension: true,
    summary: 'The step-by-step record of the last runs, newest first',
    params: WorkflowId,
    query: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'default 10' })) }),
    responses: { 200: Data(Type.Array(RunRecord)) },
    errors: [404],
  },
  ...(['emits', 'observations'] as const).map((kind): RouteContract => ({
    method: 'GET',
    path: `/sse/p/{id}/${kind}`,
    tag: 'sse',
    extension: true,
    summary: kind === 'emits' ? "Live stream of a workflow's emitted events" : "Live stream of a workflow's $logs and $errors",
    description: 'Server-sent events: one unnamed message per event (data = the event summary JSON, id = the event id); `Last-Event-ID` resumes after that event.',
    params: WorkflowId,
    query: Type.Object({ expand: Type.Optional(Expand) }),
    responses: { 200: 'sse' },
    errors: [404, 429],
  })),
  {
    method: 'GET',
    path: '/sse/p/{id}/sse',
    tag: 'sse',
    extension: true,
    summary: "Live stream of a workflow's $.send.sse events",
    description: 'One message per `$.send.sse({ channel, payload })` of a successful run, sent live (not kept): `event:` the channel, `data:` the payload JSON.',
    params: WorkflowId,
    responses: { 200: 'sse' },
    errors: [404, 429],
  },
];
