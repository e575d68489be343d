import type { FastifyInstance } from 'fastify';
import { MikroORM, RequestContext } from '@mikro-orm/core';

/**
 * A request-scoped EntityManager for every route but the HTTP ingress `/e/…` (its hot path forks
 * its own only on a cache miss). A Fastify hook rather than a Nest middleware: with no middleware,
 * the middleware engine Nest installs has nothing to match on each of the ingress's requests.
 */
export function registerRequestContext(fastify: FastifyInstance, orm: MikroORM): void {
  fastify.addHook('onRequest', (req, _reply, done) => {
    if (req.url.startsWith('/e/')) return done();
    RequestContext.create(orm.em, done);
  });
}
