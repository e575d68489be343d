import { TSchema } from '@sinclair/typebox';
import { bodyOf, ErrorBody, formBodyOf, queryOf, RouteContract } from './route-contract';
import { API_ROUTES } from './api-routes';

type Json = Record<string, unknown>;

/** A schema as plain JSON (TypeBox keeps its markers in symbols, which JSON drops). */
function plain(schema: TSchema): Json {
  return JSON.parse(JSON.stringify(schema)) as Json;
}

function parameters(route: RouteContract): Json[] {
  const out: Json[] = [];
  for (const [name, schema] of Object.entries(route.params?.properties ?? {})) {
    out.push({ name, in: 'path', required: true, schema: plain(schema) });
  }
  const query = queryOf(route);
  for (const [name, schema] of Object.entries(query.properties)) {
    const fromBody = !!route.body?.properties[name] && !route.query?.properties[name];
    const s = plain(schema);
    out.push({ name, in: 'query', required: (query.required ?? []).includes(name), schema: s, ...(fromBody ? { description: `the body field ${name}, sent in the query string instead` } : s.description ? { description: s.description } : {}) });
  }
  return out;
}

function responses(route: RouteContract): Json {
  const out: Json = {};
  for (const [status, schema] of Object.entries(route.responses)) {
    if (schema === null) out[status] = { description: 'no content' };
    else if (schema === 'sse') out[status] = { description: 'an event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } };
    else if (schema === 'prometheus') out[status] = { description: 'metrics in the Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } };
    else out[status] = { description: 'success', content: { 'application/json': { schema: plain(schema) } } };
  }
  // Every authenticated route takes `org_id`, and one naming an org the caller is not a member of is a 404;
  // it may wait its turn behind the key's other requests (429), and needs Postgres (503 while it is unavailable).
  // A request body is parsed on every route but GET's: one over the server's body limit is a 413, one of another type a 415.
  const bodyErrors = route.method === 'GET' ? [] : [413, 415];
  const errors = [...new Set([400, ...(route.public ? [] : [401, 404, 429, 503]), ...bodyErrors, ...(route.errors ?? [])])].sort((x, y) => x - y);
  for (const status of errors) out[status] = { $ref: `#/components/responses/Error${status}` };
  return out;
}

/**
 * The body types an operation reads (bootstrap.ts parseApiBody, RouteValidator), each with what it holds: JSON as
 * `application/json` or any `+json` type (`application/merge-patch+json`), JSON text as `text/plain`, and, on every
 * route but those that read their fields from a JSON body only (`bodyOnly`), a form whose fields are text like the
 * query string (`active=false`, `configured_props` as JSON text). Any of them in the charset its Content-Type names.
 */
function requestBody(route: RouteContract, body: TSchema): Json {
  const json = plain(body);
  const form = formBodyOf(route);
  return {
    required: !!route.bodyRequired,
    description:
      'A JSON object, sent as application/json, as any type with the +json suffix (application/merge-patch+json), or as text/plain holding its JSON text' +
      (form
        ? '; or a form (application/x-www-form-urlencoded), whose fields are text as in the query string. A JSON object sent labelled as a form (curl -d without a Content-Type) is read as JSON.'
        : '. A JSON object sent labelled as a form (curl -d without a Content-Type) is read as JSON; a form of fields is a 415.') +
      ' Media types are read in any letter case, in the charset the Content-Type names (UTF-8 without one).',
    content: {
      'application/json': { schema: json },
      'application/*+json': { schema: json },
      'text/plain': { schema: { type: 'string', contentMediaType: 'application/json', contentSchema: json } },
      ...(form ? { 'application/x-www-form-urlencoded': { schema: plain(form) } } : {}),
    },
  };
}

const ERROR_TEXT: Record<number, string> = {
  400: 'invalid input (the message names the field)',
  401: 'missing or invalid API key',
  403: 'quota_exceeded: the account already has as many of this resource as its quota allows (details.resource, details.limit)',
  404: 'not found, or not yours (on every route: org_id naming an org you are not a member of)',
  409: 'conflict',
  413: 'too large (a value over its limit, or a request body over the server\'s body limit)',
  415: 'the request body is not JSON (application/json, a +json type), text or a form, or is compressed (Content-Encoding), or its charset is unknown',
  429: 'too many requests at once with this API key, or without a key from this client address (API_MAX_CONCURRENT_PER_KEY): retry after `Retry-After` seconds',
  503: 'a service it needs (Postgres, NATS) is unavailable or saturated for now: retry after `Retry-After` seconds',
};

/** The OpenAPI 3.1 document of the api, generated from the route declarations. */
export function buildOpenApi(serverUrl: string): Json {
  const paths: Record<string, Json> = {};
  for (const route of API_ROUTES) {
    const body = bodyOf(route);
    const op: Json = {
      operationId: operationId(route),
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: [route.tag],
      ...(route.extension ? { 'x-extension': true } : {}),
      ...(route.public ? { security: [] } : {}),
      parameters: parameters(route),
      ...(body ? { requestBody: requestBody(route, body) } : {}),
      responses: responses(route),
    };
    paths[route.path] = { ...(paths[route.path] ?? {}), [route.method.toLowerCase()]: op };
  }
  const errorResponses = Object.fromEntries(
    Object.entries(ERROR_TEXT).map(([status, text]) => [`Error${status}`, { description: text, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }]),
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'Event source service',
      version: '1',
      description: "Pipedream's REST API for components, sources, events, subscriptions and webhooks. Operations marked `x-extension: true` go beyond Pipedream's API.",
    },
    servers: [{ url: serverUrl }],
    security: [{ bearer: [] }],
    tags: [...new Set(API_ROUTES.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API_KEY>' } },
      schemas: { Error: plain(ErrorBody) },
      responses: errorResponses,
    },
  };
}

/** `getSourcesId`, `postComponentsKeyOrIdPropsPropOptions`…: stable names for generated clients. */
function operationId(route: RouteContract): string {
  const words = route.path
    .replace(/^\/v1\//, '/')
    .split('/')
    .filter(Boolean)
    .map((seg) => seg.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : '')))
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1));
  return route.method.toLowerCase() + words.join('');
}
