import { NotFoundException } from '@nestjs/common';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuthContext } from './auth.context';
import { closeLingering } from '../common/lingering-close';
import { ApiKeyGuard, isPublicRoute, requiredKey } from './api-key.guard';

/** Whether a request comes with a body (a declared length above 0, or chunks). */
const hasBody = (req: FastifyRequest): boolean => (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') || req.headers['transfer-encoding'] !== undefined;

/**
 * Answers a request that has a body before its body is read when it can only be refused: Fastify read a body
 * whole (up to twice COMPONENT_MAX_BYTES) before the guard, or the answer that no such route exists, and each made-up
 * bearer token waits in a lane of its own (API_MAX_CONCURRENT_PER_KEY), so 100 connections of one client, without any
 * account, each holding 10 MB of a body under a token of its own, held 1 GB of the api until their request timeout.
 * A request with a body to a `/v1` route that needs an API key, with a missing, malformed or unknown one, is answered
 * `401` now, to a path no route has (under `/v1` or not) its `404` (or `405`), the body unread and the connection closed (in stages: closeLingering);
 * the guard looks a known key up again once the body is read (a revocation meanwhile applies). A `@Public()` route
 * (`GET /v1/openapi.json`) answers as it would without the body, which Node reads and drops. Registered after the key's
 * lane (registerKeyConcurrency), so its query waits its turn like the request's.
 */
export function registerAuthBeforeBody(fastify: FastifyInstance, guard: ApiKeyGuard): void {
  fastify.addHook('onRequest', async (req, reply) => {
    const route = req.routeOptions?.url;
    if (reply.sent || !hasBody(req) || (route !== undefined && (!route.startsWith('/v1/') || isPublicRoute(req.routeOptions.config)))) return;
    try {
      // The error filter answers it as the router's own (405 where the path has routes for other methods).
      if (route === undefined) throw new NotFoundException(`Cannot ${req.method} ${req.raw.url}`);
      (req as FastifyRequest & { auth?: AuthContext }).auth = await guard.authenticate(requiredKey(req.headers.authorization));
    } catch (e) {
      reply.header('connection', 'close');
      closeLingering(req.raw.socket);
      throw e;
    }
  });
}
