import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyInstance } from 'fastify';

/** The signal of the `/v1` request being handled, in its async context (what it calls, however deep). */
const current = new AsyncLocalStorage<AbortSignal>();

/**
 * Aborted when the client of the request being handled went away before its answer was written out (its connection
 * closed): work done only for that answer (a component read in the account's sandbox) is cancelled. Undefined outside a
 * `/v1` request (the registry's seeding at start, the admin CLI).
 */
export function clientGoneSignal(): AbortSignal | undefined {
  return current.getStore();
}

/**
 * Gives every `/v1` request a signal (clientGoneSignal) aborted when its connection closes before its answer has been
 * written out. 30 abandoned reads of components whose code loops for ever ran one after another, 60 s each, in their
 * account's sandbox (its key refused 429 meanwhile): a read now stops with its client. A hook with `done` (as MikroORM's
 * RequestContext), so that the handler runs in the context.
 */
export function registerClientGone(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (req, reply, done) => {
    if (!req.url.startsWith('/v1/') && !req.routeOptions?.url?.startsWith('/v1/')) return done();
    const ac = new AbortController();
    const closed = (): void => {
      if (!reply.raw.writableFinished) ac.abort();
    };
    reply.raw.once('close', closed);
    if (reply.raw.destroyed) closed();
    current.run(ac.signal, done);
  });
}
