import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { EntityManager } from '@mikro-orm/postgresql';
import { sha256Hex, UnauthorizedError } from '@app/contracts';
import { ApiKey, OrgMember, User } from '@app/db';
import { AuthContext } from './auth.context';

export const PUBLIC_ROUTE = 'public-route';
/** Marks a route that needs no API key (HTTP source endpoints, health). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(PUBLIC_ROUTE, true);

const CACHE_TTL_MS = 5_000;

/** `Authorization: Bearer <API_KEY>` on every route not marked `@Public()`. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly cache = new Map<string, { auth: AuthContext; expiresAt: number }>();

  constructor(private readonly reflector: Reflector, private readonly em: EntityManager) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, [context.getHandler(), context.getClass()])) return true;
    const req = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined>; auth?: AuthContext }>();
    const header = req.headers.authorization;
    const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) throw new UnauthorizedError(header ? 'malformed Authorization header: expected "Bearer <API_KEY>"' : 'missing API key: send Authorization: Bearer <API_KEY>');
    req.auth = await this.authenticate(match[1]);
    return true;
  }

  /** Resolves a key to its user; a short cache keeps hot paths off the database. Rotation takes effect within the TTL. */
  async authenticate(key: string): Promise<AuthContext> {
    const hash = sha256Hex(key);
    const hit = this.cache.get(hash);
    if (hit && hit.expiresAt > Date.now()) return hit.auth;
    const em = this.em.fork();
    const apiKey = await em.findOne(ApiKey, { keyHash: hash, revokedAt: null });
    const user = apiKey ? await em.findOne(User, { id: apiKey.userId }) : null;
    if (!apiKey || !user) throw new UnauthorizedError('invalid API key');
    const orgs = await em.find(OrgMember, { userId: user.id });
    const auth: AuthContext = { userId: user.id, username: user.username, email: user.email, plan: user.plan, orgIds: orgs.map((o) => o.orgId) };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(hash, { auth, expiresAt: Date.now() + CACHE_TTL_MS });
    return auth;
  }
}
