import { Type } from '@sinclair/typebox';
import { RouteContract } from '../contract/route-contract';
import { Expand, Id } from '../contract/schemas';

const STREAM = {
  tag: 'sse',
  // Pipedream's API leaves the address and format of a source's event stream unshown: these are this service's.
  extension: true,
  params: Type.Object({ id: Id('dc_…') }),
  query: Type.Object({ expand: Type.Optional(Expand) }),
  description: 'Server-sent events: one unnamed message per event (data = the event summary JSON, id = the event id); `Last-Event-ID` resumes after that event.',
  responses: { 200: 'sse' as const },
  // 429: SSE_MAX_STREAMS_PER_KEY streams already open with the key.
  errors: [404, 429],
};

export const SSE_ROUTES: RouteContract[] = [
  { method: 'GET', path: '/sse/dc/{id}/emits', summary: "Live stream of a source's emitted events", ...STREAM },
  { method: 'GET', path: '/sse/dc/{id}/observations', summary: "Live stream of a source's $logs and $errors", ...STREAM },
  {
    method: 'GET',
    path: '/sources/{id}/sse',
    summary: "Live stream of a source's emitted events at Pipedream's address (the same stream as /sse/dc/{id}/emits)",
    ...STREAM,
    // Pipedream's docs give this address (https://api.pipedream.com/sources/dc_…/sse).
    extension: false,
  },
];
