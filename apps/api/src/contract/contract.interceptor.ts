import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { Observable } from 'rxjs';
import { BadRequestError, NotFoundError } from '@app/contracts';
import type { AuthContext } from '../auth/auth.context';
import { RouteValidator } from './contract-validator';
import { routeKey, routerPath } from './route-contract';
import { API_ROUTES } from './api-routes';

const VALIDATORS = new Map(API_ROUTES.map((r) => [routeKey(r.method, routerPath(r.path)), new RouteValidator(r)]));

/** The validator of a route as Fastify knows it (`GET /v1/sources/:id`); undefined for routes without a contract. */
export function validatorFor(method: string, routeUrl: string | undefined): RouteValidator | undefined {
  return routeUrl === undefined ? undefined : VALIDATORS.get(routeKey(method, routeUrl));
}

/**
 * Applies each route's declared contract before its handler: path parameters, query and body are
 * checked against the declaration (400 naming the field), and `org_id` must name an org the caller
 * belongs to on every route (404 otherwise, as for any id that is not the caller's); it is kept on the caller's
 * context (`namedOrgId`), where a resource the path names must be that org's (`assertPathResource`).
 */
@Injectable()
export class ContractInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<FastifyRequest & { auth?: AuthContext }>();
    const validator = validatorFor(req.method === 'HEAD' ? 'GET' : req.method, req.routeOptions.url);
    if (validator) {
      validator.validate(req.params, req.query, req.body);
      if (req.auth) assertOrgMember(req.auth, req.params, req.query, req.body);
    }
    return next.handle();
  }
}

function assertOrgMember(auth: AuthContext, params: unknown, query: unknown, body: unknown): void {
  const fromBody = body && typeof body === 'object' ? (body as Record<string, unknown>).org_id : undefined;
  const orgId = fromBody ?? (query as Record<string, unknown> | undefined)?.org_id;
  if (typeof orgId !== 'string' || orgId === '') return;
  if (!auth.orgIds.includes(orgId)) throw NotFoundError.of('org', orgId, 'org_id');
  auth.namedOrgId = orgId;
  // An org route (`/orgs/{org_id}/…`) acts in its path's org: another one in org_id is never silently dropped. A path
  // org the caller is not in is left to the route, which answers 404 as for any org it cannot see.
  const pathOrgId = (params as Record<string, unknown> | undefined)?.org_id;
  if (typeof pathOrgId === 'string' && pathOrgId !== orgId && auth.orgIds.includes(pathOrgId)) {
    throw new BadRequestError(`org_id ${orgId} names another org than the path's ${pathOrgId}: leave it out`, { in: fromBody === undefined ? 'query' : 'body', field: 'org_id', path_org_id: pathOrgId });
  }
}

const PATTERNS = API_ROUTES.map((r) => ({ method: r.method, regex: new RegExp(`^${routerPath(r.path).replace(/[.$]/g, '\\$&').replace(/:[A-Za-z_]+/g, '[^/]+')}/?$`) }));

/**
 * The methods of a path (for a 405's `Allow` header); empty when no route has this path. HEAD is answered
 * wherever GET is (Fastify's HEAD routes), so it is listed after it (RFC 9110 §10.2.1).
 */
export function allowedMethods(url: string): string[] {
  const path = url.split('?')[0];
  return [...new Set(PATTERNS.filter((p) => p.regex.test(path)).flatMap((p) => (p.method === 'GET' ? ['GET', 'HEAD'] : [p.method])))];
}
