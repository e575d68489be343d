import { applyDecorators, CanActivate, ExecutionContext, Inject, Injectable, SetMetadata } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { Reflector } from '@nestjs/core';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { ServiceUnavailableError, sha256Hex, UnauthorizedError } from '@app/contracts';
import type { Plan } from '@app/db';
import { BoundedLane, LaneFullError, unknownKeysLane } from '../common/bounded-lane';
import { RecentKeys } from '../common/recent-keys';
import { AuthContext } from './auth.context';

export const PUBLIC_ROUTE = 'public-route';
/**
 * Marks a route handler that needs no API key (the OpenAPI document, health, metrics): for the guard, and in its Fastify
 * route's config, where the hooks that run before Nest read it (registerAuthBeforeBody).
 */
export const Public = (): MethodDecorator => applyDecorators(SetMetadata(PUBLIC_ROUTE, true), RouteConfig({ [PUBLIC_ROUTE]: true }));

/** Whether Fastify's route options are those of a `@Public()` handler. */
export const isPublicRoute = (config: unknown): boolean => (config as Record<string, unknown> | undefined)?.[PUBLIC_ROUTE] === true;

/**
 * The key, its user and the user's orgs in one round trip. Nothing of it is
 * cached: the admin CLI changes keys, plans and memberships straight in
 * Postgres, and every api replica must see a change on the next request
 * (an in-process cache answered a new org member 404 for seconds).
 */
const AUTH_QUERY = `select u.id, u.username, u.email, u.plan,
    coalesce((select array_agg(m.org_id::text order by m.created_at, m.org_id) from org_members m where m.user_id = u.id), '{}'::text[]) as org_ids
  from api_keys k join users u on u.id = k.user_id
  where k.key_hash = ? and k.revoked_at is null`;

/** Keys that authenticated on this replica remembered at most (to look them up outside the unknown keys' lane). */
const KNOWN_MAX = 50_000;
/** Keys found to be no key (made up, or revoked) remembered at most, the oldest forgotten first. */
const MISSES_MAX = 10_000;
/**
 * How long a key found to be no key is answered 401 without a look-up. Any length would be right: the api makes every
 * key of 32 random bytes, so none is ever found after a client sent it, and a revoked key is never valid again.
 */
const MISS_TTL_MS = 60_000;

interface AuthRow {
  id: string;
  username: string;
  email: string;
  plan: Plan;
  org_ids: string[];
}

/** The API key of an `Authorization: Bearer <API_KEY>` header, or undefined when there is none or it is malformed. */
export function bearerKey(header: string | undefined): string | undefined {
  // Spaces and tabs only (RFC 9110 OWS, RFC 6750 `1*SP`): `\s` took a no-break space (0xA0, which Node passes in a
  // header as Latin-1) or any Unicode space as one, so `Bearer\u00a0<key>` authenticated.
  return header ? /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)?.[1] : undefined;
}

/** The API key an `Authorization` header must give, or the 401 of a missing or malformed one. */
export function requiredKey(header: string | undefined): string {
  const key = bearerKey(header);
  if (!key && header) throw new UnauthorizedError('malformed Authorization header: expected "Bearer <API_KEY>"', 'invalid_request');
  if (!key) throw new UnauthorizedError('missing API key: send Authorization: Bearer <API_KEY>');
  return key;
}

/**
 * `Authorization: Bearer <API_KEY>` on every route not marked `@Public()`.
 *
 * Anyone may send any key, so a key this replica has not seen authenticate is looked up in the lane of keys anyone may
 * make up (`unknownKeysLane`: a quarter of the Postgres pool, then 503 with Retry-After), and one found to be no key is
 * answered 401 without a look-up for MISS_TTL_MS: made-up keys sent as fast as the api answers them leave the pool to
 * real keys. A key that authenticated is still looked up on every request, so its revocation applies to the next one.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly known = new RecentKeys(KNOWN_MAX);
  private readonly misses = new RecentKeys(MISSES_MAX);
  private readonly unknownLoads: BoundedLane;

  constructor(private readonly reflector: Reflector, private readonly em: EntityManager, @Inject(APP_CONFIG) config: AppConfig) {
    this.unknownLoads = unknownKeysLane(config.dbPoolMax);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, [context.getHandler(), context.getClass()])) return true;
    const req = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined>; auth?: AuthContext }>();
    // A request with a body was authenticated before it was read (registerAuthBeforeBody), and is again now that it has
    // been: a client may take up to HTTP_REQUEST_TIMEOUT_MS to send it, and a key revoked or a membership ended meanwhile
    // applies to it too (a webhook was created by a POST whose body came after its key was revoked). The key is known
    // by then, so it is looked up outside the unknown keys' lane.
    req.auth = await this.authenticate(requiredKey(req.headers.authorization));
    return true;
  }

  /** Resolves a key to its user and orgs as Postgres has them now: a rotated key, a plan or a membership change applies to the next request. */
  async authenticate(key: string): Promise<AuthContext> {
    const hash = sha256Hex(key);
    if (this.misses.has(hash)) throw new UnauthorizedError('invalid API key', 'invalid_token');
    const load = (): Promise<AuthRow[]> => this.em.getConnection().execute(AUTH_QUERY, [hash]);
    const rows = await (this.known.has(hash) ? load() : this.unknownLoads.run(load)).catch((e: unknown) => {
      throw e instanceof LaneFullError ? new ServiceUnavailableError('the API key cannot be checked right now: retry later', 1) : e;
    });
    const row = rows[0];
    if (!row) {
      this.known.delete(hash);
      this.misses.add(hash, Date.now() + MISS_TTL_MS);
      throw new UnauthorizedError('invalid API key', 'invalid_token');
    }
    this.known.add(hash);
    return { userId: row.id, username: row.username, email: row.email, plan: row.plan, orgIds: row.org_ids };
  }
}
