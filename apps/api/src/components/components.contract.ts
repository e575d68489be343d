import { Type } from '@sinclair/typebox';
import { RouteContract } from '../contract/route-contract';
import { Data, Id, Timestamp } from '../contract/schemas';

export const ConfigurableProp = Type.Object({ name: Type.String(), type: Type.String() }, { additionalProperties: true });

export const Component = Type.Object(
  {
    id: Id('sc_…'),
    code: Type.String(),
    code_hash: Type.String({ description: 'SHA-256 hex of code' }),
    name: Type.String(),
    version: Type.String(),
    key: Type.Optional(Type.String({ description: 'extension' })),
    type: Type.Union([Type.Literal('source'), Type.Literal('action')], { description: 'extension' }),
    description: Type.Optional(Type.String({ description: 'extension' })),
    component_url: Type.Optional(Type.String({ description: 'extension' })),
    configurable_props: Type.Array(ConfigurableProp),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { additionalProperties: false },
);

const KeyOrId = Type.Object({ keyOrId: Id('a component id (sc_…) or key') });

/** The source being edited: additionalProps() starts from the props it added for it last time. */
const SourceId = Type.String({ minLength: 1, maxLength: 64, description: 'a source (dc_…) you can reach: previousPropDefs holds the props additionalProps() added for it last time' });

export const COMPONENT_ROUTES: RouteContract[] = [
  {
    method: 'POST',
    path: '/v1/components',
    tag: 'components',
    summary: 'Save a component from its code or a URL',
    body: Type.Object({
      component_code: Type.Optional(Type.String({ description: 'the code (CommonJS or ESM); one of component_code and component_url is required' })),
      component_url: Type.Optional(Type.String({ maxLength: 2048, description: 'http(s) URL of the entry file' })),
    }),
    responses: { 200: Data(Component) },
    errors: [404, 413],
  },
  {
    method: 'GET',
    path: '/v1/components/registry/{key}',
    tag: 'components',
    summary: 'A globally published component',
    params: Type.Object({ key: Id('registry key') }),
    responses: { 200: Data(Component) },
    errors: [404],
  },
  {
    method: 'GET',
    path: '/v1/components/{keyOrId}',
    tag: 'components',
    summary: 'A component by id, or the newest version of a key in your namespace',
    params: KeyOrId,
    responses: { 200: Data(Component) },
    errors: [404],
  },
  {
    method: 'POST',
    path: '/v1/components/{keyOrId}/props/{prop}/options',
    tag: 'components',
    extension: true,
    summary: "Call a prop's options() to list its choices",
    params: Type.Object({ keyOrId: KeyOrId.properties.keyOrId, prop: Id('prop name') }),
    body: Type.Object({
      page: Type.Optional(Type.Integer({ minimum: 0, description: 'default 0' })),
      prevContext: Type.Optional(Type.Unknown({ description: 'the context returned by the previous call' })),
      prev_context: Type.Optional(Type.Unknown({ description: 'same as prevContext' })),
      configured_props: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'values chosen so far' })),
      source_id: Type.Optional(SourceId),
    }),
    responses: { 200: Data(Type.Object({ options: Type.Array(Type.Unknown()), context: Type.Unknown() })) },
    errors: [404],
  },
  {
    method: 'POST',
    path: '/v1/components/{keyOrId}/props/reload',
    tag: 'components',
    extension: true,
    summary: 'The props a source has for the values given so far (additionalProps())',
    description:
      "Pipedream's reload props: the component's props followed by those its additionalProps() returns for `configured_props` (required props may be missing; given values are checked). `previousPropDefs` holds the component's props, and with `source_id` the props additionalProps() added for that source last time (what an update of it computes).",
    params: KeyOrId,
    body: Type.Object({
      configured_props: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'values chosen so far' })),
      source_id: Type.Optional(SourceId),
    }),
    responses: { 200: Data(Type.Object({ configurable_props: Type.Array(ConfigurableProp) })) },
    errors: [404],
  },
];
