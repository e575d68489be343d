import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { BadRequestError, NotFoundError } from '@app/contracts';
import type { Plan } from '@app/db';

/** The authenticated caller, attached to the request by `ApiKeyGuard`. */
export interface AuthContext {
  userId: string;
  username: string;
  email: string;
  plan: Plan;
  /** Orgs the user belongs to. */
  orgIds: string[];
  /** The org this request's `org_id` names (one of `orgIds`; set by ContractInterceptor), undefined without one. */
  namedOrgId?: string;
}

export const Auth = createParamDecorator((_: unknown, ctx: ExecutionContext): AuthContext => {
  return (ctx.switchToHttp().getRequest() as { auth: AuthContext }).auth;
});

/** True when the caller may reach a resource owned by `ownerId` (their account or one of their orgs). */
export function canAccess(auth: AuthContext, ownerId: string): boolean {
  return ownerId === auth.userId || auth.orgIds.includes(ownerId);
}

/** Whether a resource owned by `ownerId` is in the org this request's `org_id` names (any is, without one). */
export function inNamedOrg(auth: AuthContext, ownerId: string): boolean {
  return auth.namedOrgId === undefined || ownerId === auth.namedOrgId;
}

/** Throws the same 404 for missing and for not-yours, so ids never leak across accounts. */
export function assertAccess<T extends { ownerId: string }>(auth: AuthContext, resource: T | null | undefined, what: string, id: string): T {
  if (!resource || !canAccess(auth, resource.ownerId)) throw NotFoundError.of(what, id);
  return resource;
}

/**
 * As `assertAccess`, for the resource a route's path names (`/sources/{id}`…): with `org_id`, one outside that org is
 * not found there either (the spec's org_id is the org an operation takes effect in). A resource a request only refers
 * to (a subscription's ends, a workflow's trigger source) is checked with `assertAccess`.
 */
export function assertPathResource<T extends { ownerId: string }>(auth: AuthContext, resource: T | null | undefined, what: string, id: string): T {
  if (!resource || !canAccess(auth, resource.ownerId) || !inNamedOrg(auth, resource.ownerId)) throw NotFoundError.of(what, id);
  return resource;
}

/**
 * The namespace a request acts in: the org given by `org_id` (caller must be a
 * member) or, without one, the caller's own account. An empty or blank `org_id` is refused by the route's
 * contract (400); it is refused here too, never read as the caller's account.
 */
export function namespaceOf(auth: AuthContext, orgId: unknown): string {
  if (orgId === undefined || orgId === null) return auth.userId;
  if (typeof orgId !== 'string') throw new BadRequestError('org_id must be a string', { field: 'org_id' });
  if (orgId.trim() === '') throw new BadRequestError('org_id must be an org id (o_…), not empty: leave org_id out to act in your own account', { field: 'org_id' });
  if (!auth.orgIds.includes(orgId)) throw NotFoundError.of('org', orgId, 'org_id');
  return orgId;
}
