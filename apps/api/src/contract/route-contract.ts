import { TObject, TSchema, Type } from '@sinclair/typebox';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/**
 * One route's declared contract: the single place its path parameters, query, body and responses
 * are written down. The api validates every request against it (`ContractInterceptor`), and
 * `GET /v1/openapi.json` is generated from it.
 */
export interface RouteContract {
  method: HttpMethod;
  /** OpenAPI form: `/v1/sources/{id}`. */
  path: string;
  summary: string;
  /** Groups routes in the document (`sources`, `webhooks`…). */
  tag: string;
  /** Beyond Pipedream's REST API: marked `x-extension: true` in the document. */
  extension?: boolean;
  /** No API key needed. */
  public?: boolean;
  /** Longer text for the document. */
  description?: string;
  params?: TObject;
  /** Query parameters besides the common ones (`include`, `exclude`, `org_id`, always allowed). */
  query?: TObject;
  /**
   * JSON body (an object; may be absent unless `bodyRequired`). For POST/PUT/DELETE with a body, the
   * same fields may come in the query string instead (scalars as text, objects as their JSON text).
   */
  body?: TObject;
  bodyRequired?: boolean;
  /** The body's fields are read from the body only (not from the query string). */
  bodyOnly?: boolean;
  /** Success responses by status: a schema for a JSON body, `null` for none, `'sse'` for an event stream, `'prometheus'` for metrics text. */
  responses: Record<number, TSchema | null | 'sse' | 'prometheus'>;
  /** Error statuses the route may answer besides 400/401 (all with the error body). */
  errors?: number[];
}

/** The description of a `/users/me/…` list that, given `org_id`, answers what its org route `twin` answers. */
export const orgTwinOf = (twin: string): string => `With \`org_id\`, the org's instead of yours: exactly what ${twin} answers (404 when you are not a member).`;

/** The parameters every route accepts (docs/api.md "Common parameters"). */
export const COMMON_QUERY = {
  include: Type.Optional(Type.String({ description: 'comma-separated top-level fields of each returned object to keep' })),
  exclude: Type.Optional(Type.String({ description: 'comma-separated top-level fields of each returned object to drop' })),
  // Empty or blank is refused (400), never read as "no org": a client that names org_id and sends no value would act
  // in the caller's own account (`POST /sources?org_id=` creating a personal source); a blank one (`org_id=%20`) is
  // no more an org id than an empty one, and is answered as it is.
  org_id: Type.Optional(
    Type.String({
      minLength: 1,
      pattern: '\\S',
      'x-expected': 'an org id (o_…), not empty: leave org_id out to act in your own account',
      description: 'act inside an organization you belong to (else 404); empty or blank → 400',
    }),
  ),
};

/** `{ error, code, details? }`: every error, from every layer. */
export const ErrorBody = Type.Object(
  {
    error: Type.String(),
    code: Type.String(),
    details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
);

/** Express path (`:id`) of an OpenAPI path (`{id}`): how Fastify knows the route. */
export function routerPath(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ':$1');
}

export function routeKey(method: string, routerPathOrPattern: string): string {
  return `${method.toUpperCase()} ${routerPathOrPattern.replace(/\/$/, '')}`;
}

/**
 * The query schema of a route: its own parameters, the common ones, and for a route with a body the
 * body's fields (a client may send them in the query string: scalars as text, anything else as JSON text).
 */
export function queryOf(route: RouteContract): TObject {
  return Type.Object(asText({ ...COMMON_QUERY, ...(route.query?.properties ?? {}) }, route.bodyOnly ? {} : (route.body?.properties ?? {})), { additionalProperties: false });
}

/** `fields` added to `props` as text carries them: scalars as the text of their type, anything else as JSON text. */
function asText(props: Record<string, TSchema>, fields: Record<string, TSchema>): Record<string, TSchema> {
  const out = { ...props };
  for (const [name, schema] of Object.entries(fields)) {
    if (name in out) continue;
    const type = (schema as { type?: unknown }).type;
    out[name] = type === 'string' || type === 'integer' || type === 'boolean' || type === 'number' ? Type.Optional(Type.Unsafe({ ...schema })) : Type.Optional(Type.String({ description: 'JSON text' }));
  }
  return out;
}

/**
 * The schema of a form body (`application/x-www-form-urlencoded` fields, not JSON): text like a query string, so
 * its fields are what the query string may carry (`active=false`, `page=1`). Undefined for a route whose body
 * fields come from a JSON body only (`bodyOnly`): a form of fields there is a 415 (RouteValidator).
 */
export function formBodyOf(route: RouteContract): TObject | undefined {
  const body = bodyOf(route);
  if (!body || route.bodyOnly) return undefined;
  return Type.Object(asText(COMMON_QUERY, route.body?.properties ?? {}), { additionalProperties: false });
}

/** The body schema of a route: its fields plus the common parameters (which may come in the body too). */
export function bodyOf(route: RouteContract): TObject | undefined {
  if (!route.body) return undefined;
  return Type.Object({ ...COMMON_QUERY, ...route.body.properties }, { additionalProperties: false });
}
