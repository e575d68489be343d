import Fastify from 'fastify';
import { requireDeclaredRoutes } from './route-coverage';

describe('routes without a declared contract', () => {
  it('stop the api at start, naming the route', async () => {
    const app = Fastify();
    requireDeclaredRoutes(app);
    app.get('/v1/sources/:id', async () => ({}));
    app.get('/v1/undeclared', async () => ({}));
    await expect(app.ready()).rejects.toThrow('routes without a declared contract (add them to apps/api/src/contract/api-routes.ts): GET /v1/undeclared');
    await app.close();
  });

  it('let it start when every route is declared (the HTTP interface /e/… is not part of the API)', async () => {
    const app = Fastify();
    requireDeclaredRoutes(app);
    app.get('/v1/sources/:id', async () => ({}));
    app.post('/e/:endpointKey', async () => ({}));
    await expect(app.ready()).resolves.toBeDefined();
    await app.close();
  });
});
