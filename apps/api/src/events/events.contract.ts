import { Type } from '@sinclair/typebox';
import { RouteContract } from '../contract/route-contract';
import { EventIdText, Expand, Id, PAGE_QUERY, PageOf } from '../contract/schemas';

export const EventSummary = Type.Object(
  {
    id: Type.String({ description: '<epoch_ms>-<seq>' }),
    indexed_at_ms: Type.Integer(),
    event: Type.Unknown(),
    metadata: Type.Object({ emit_id: Type.String(), name: Type.String(), emitter_id: Type.String() }),
    summary: Type.Optional(Type.String({ description: 'extension: with expand=summary' })),
  },
  { additionalProperties: false },
);

const EventId = (description: string) => Type.Optional(EventIdText(description));
const ERRORS_QUERY = Type.Object({ ...PAGE_QUERY, expand: Type.Optional(Expand) });
const SUMMARY_QUERY = Type.Object({
  ...ERRORS_QUERY.properties,
  event_name: Type.Optional(Type.String({ maxLength: 255, description: 'one channel: "" (default), a custom name, $errors or $logs' })),
});

export const EVENT_ROUTES: RouteContract[] = [
  {
    method: 'GET',
    path: '/v1/sources/{id}/event_summaries',
    tag: 'events',
    summary: "A source's recent events, newest first",
    params: Type.Object({ id: Id('dc_…') }),
    query: SUMMARY_QUERY,
    responses: { 200: PageOf(EventSummary) },
    errors: [404],
  },
  {
    method: 'DELETE',
    path: '/v1/sources/{id}/events',
    tag: 'events',
    summary: "Delete a source's events (all, or a range of ids)",
    params: Type.Object({ id: Id('dc_…') }),
    description:
      '`start_id` and `end_id` go in the query string, or in a JSON body as on DELETE /subscriptions. Events outside the range that were stored together with deleted ones (runs stored as one batch) are stored again, keeping their ids: an event stream resumed with `Last-Event-ID` from before them shows them after newer events.',
    body: Type.Object({ start_id: EventId('first event id to delete'), end_id: EventId('last event id to delete') }),
    responses: { 202: null },
    errors: [404],
  },
  {
    method: 'GET',
    path: '/v1/workflows/{id}/event_summaries',
    tag: 'events',
    summary: "A workflow's emitted events ($.send.emit), newest first",
    description: 'Each event is `{ raw_event: <emitted data> }`; metadata.emitter_id is the workflow.',
    params: Type.Object({ id: Id('p_…') }),
    query: SUMMARY_QUERY,
    responses: { 200: PageOf(EventSummary) },
    errors: [404],
  },
  {
    method: 'GET',
    path: '/v1/workflows/{id}/{channel}/event_summaries',
    tag: 'events',
    summary: "A workflow's $errors events, newest first",
    description: '`channel` is `$errors` (or `%24errors`), which names the channel: no `event_name`; any other channel is a 400. Each event is `{ original_event, original_context, error }` (docs/workflows.md).',
    params: Type.Object({ id: Id('p_…'), channel: Type.Literal('$errors', { description: 'the only channel listed here: $errors' }) }),
    query: ERRORS_QUERY,
    responses: { 200: PageOf(EventSummary) },
    errors: [404],
  },
];
