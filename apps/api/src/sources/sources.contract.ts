import { Type } from '@sinclair/typebox';
import { orgTwinOf, RouteContract } from '../contract/route-contract';
import { Data, Id, PAGE_QUERY, PageOf, Timestamp } from '../contract/schemas';
import { ConfigurableProp } from '../components/components.contract';

export const Source = Type.Object(
  {
    id: Id('dc_…'),
    user_id: Type.Optional(Type.String({ description: 'the creator; in single-source responses' })),
    component_id: Type.String(),
    configured_props: Type.Record(Type.String(), Type.Unknown()),
    active: Type.Boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
    name: Type.String(),
    name_slug: Type.String(),
    configurable_props: Type.Optional(
      Type.Array(ConfigurableProp, { description: "extension, for components with additionalProps(): the component's props and those additionalProps() returned for this source's values" }),
    ),
  },
  { additionalProperties: false },
);

const REF = {
  component_id: Type.Optional(Type.String({ description: 'sc_…, or a key in the source\'s namespace (yours, or the org\'s) as GET /components/{key or id} reads it; wins over code and URL' })),
  component_code: Type.Optional(Type.String({ description: 'code to save as a new component' })),
  component_url: Type.Optional(Type.String({ maxLength: 2048, description: 'URL of code to save as a new component' })),
  key: Type.Optional(
    Type.String({ maxLength: 255, description: "a component key, used when none of the three above is given: your newest component with it (the org's with org_id), else the registry's" }),
  ),
};
/** What DELETE of a source says of one a workflow names as its trigger by id. */
const NAMED = "A source any workflow of its owner names as its trigger (`trigger.source`, by id) is not deleted either: 409 conflict, `details.workflow_id` and `details.workflow_ids` (up to 20) naming them; change their trigger or delete them first.";
/** What PUT and DELETE of a source say of one a workflow deployed for its trigger. */
const MANAGED = "A source a workflow deployed for its trigger (the workflow's `trigger.source` with `managed: true`) is changed and deleted with the workflow only: 409 conflict, `details.workflow_id` naming it.";
const ConfiguredProps = Type.Object({}, { additionalProperties: true, description: 'values per prop (in the query string: its JSON text)' });
const SourceId = Type.Object({ id: Id('dc_…') });

export const SOURCE_ROUTES: RouteContract[] = [
  {
    method: 'POST',
    path: '/v1/sources',
    tag: 'sources',
    summary: 'Deploy a component as a source',
    body: Type.Object({ ...REF, name: Type.Optional(Type.String({ maxLength: 200 })), configured_props: Type.Optional(ConfiguredProps) }),
    responses: { 200: Data(Source) },
    errors: [403, 404, 413],
  },
  { method: 'GET', path: '/v1/sources/{id}', tag: 'sources', extension: true, summary: 'One source', params: SourceId, responses: { 200: Data(Source) }, errors: [404] },
  {
    method: 'PUT',
    path: '/v1/sources/{id}',
    tag: 'sources',
    summary: 'Update a source (component, name, props, active)',
    description: MANAGED,
    params: SourceId,
    body: Type.Object({
      ...REF,
      name: Type.Optional(Type.String({ maxLength: 200 })),
      configured_props: Type.Optional(ConfiguredProps),
      active: Type.Optional(Type.Boolean({ description: 'default true' })),
    }),
    responses: { 200: Data(Source) },
    errors: [404, 409, 413],
  },
  { method: 'DELETE', path: '/v1/sources/{id}', tag: 'sources', summary: 'Delete a source', description: `${MANAGED} ${NAMED}`, params: SourceId, responses: { 204: null }, errors: [404, 409] },
  { method: 'GET', path: '/v1/users/me/sources', tag: 'sources', summary: 'Your sources, newest first', description: orgTwinOf('GET /orgs/{org_id}/sources'), query: Type.Object(PAGE_QUERY), responses: { 200: PageOf(Source) } },
  {
    method: 'GET',
    path: '/v1/orgs/{org_id}/sources',
    tag: 'sources',
    summary: "An org's sources, newest first",
    params: Type.Object({ org_id: Id('o_…') }),
    query: Type.Object(PAGE_QUERY),
    responses: { 200: PageOf(Source) },
    errors: [404],
  },
  {
    method: 'POST',
    path: '/v1/sources/{id}/run',
    tag: 'sources',
    extension: true,
    summary: 'Run a source now',
    description: 'The optional body `{ "event": … }` is passed to run(); stored as an invocation before the 202. 429 `backlog_full` (scope `account`) while the account has INGEST_MAX_PENDING_PER_ACCOUNT invocations waiting.',
    params: SourceId,
    bodyOnly: true,
    body: Type.Object({ event: Type.Optional(Type.Unknown({ description: 'the event passed to run()' })) }),
    responses: { 202: Data(Type.Object({ invocation_id: Type.String() })) },
    errors: [404, 409, 413],
  },
];
