import { Injectable, OnModuleDestroy } from '@nestjs/common';
import type { FastifyInstance } from 'fastify';
import { ServiceUnavailableError } from '@app/contracts';

/**
 * Whether the api is shutting down. A provider of the root module: Nest destroys it first, before the modules whose
 * connections (Postgres, NATS) a request would need, so from then on requests are refused rather than failing on them.
 */
@Injectable()
export class ShutdownState implements OnModuleDestroy {
  active = false;

  onModuleDestroy(): void {
    this.active = true;
  }
}

/**
 * While the api shuts down, every request is a `503` in the service's error shape with `Retry-After: 1`, and its
 * connection is closed (a load balancer or client retries elsewhere). Fastify's own answer at that time (its
 * `return503OnClosing`, turned off in bootstrap) had another shape and no `Retry-After`.
 */
export function registerShutdownAnswer(fastify: FastifyInstance, state: ShutdownState): void {
  fastify.addHook('onRequest', async (_req, reply) => {
    if (!state.active) return;
    reply.header('connection', 'close');
    throw new ServiceUnavailableError('the api is shutting down: retry in a moment (another replica may answer at once)');
  });
}
