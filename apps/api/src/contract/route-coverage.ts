import type { FastifyInstance } from 'fastify';
import { isWebUiRoute } from '../web/web-ui';
import { validatorFor } from './contract.interceptor';

/**
 * Refuses to start when a route of the api has no declared contract (it would escape validation and
 * be missing from /v1/openapi.json). The HTTP interface of sources (`/e/…`) and the dashboard's files
 * (`/`, `/ui/…`) are not part of the API.
 */
export function requireDeclaredRoutes(fastify: FastifyInstance): void {
  const undeclared: string[] = [];
  fastify.addHook('onRoute', (route) => {
    if (route.url.startsWith('/e/') || route.url === '*' || route.url === '/*' || isWebUiRoute(route.url)) return;
    for (const method of ([] as string[]).concat(route.method)) {
      if (method === 'HEAD' || method === 'OPTIONS') continue;
      if (!validatorFor(method, route.url)) undeclared.push(`${method} ${route.url}`);
    }
  });
  fastify.addHook('onReady', async () => {
    if (undeclared.length) throw new Error(`routes without a declared contract (add them to apps/api/src/contract/api-routes.ts): ${undeclared.join(', ')}`);
  });
}
