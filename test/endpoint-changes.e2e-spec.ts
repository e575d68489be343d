import { client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';

const HTTP_SOURCE = `module.exports = {
  name: "Http", version: "1",
  props: { http: "$.interface.http" },
  async run(event) { this.$emit(event.body); },
};`;

/**
 * Activating, deactivating or deleting a source takes effect on its endpoint at once, on every api replica: the
 * ingress caches each endpoint for a few seconds, and a change made through the api drops it from every cache.
 * Each step first warms both replicas with the old answer, so a cache of it would show.
 */
describe('endpoint changes', () => {
  let system: System;
  let origins: string[];

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', REGISTRY_DIR: 'off' }, { apps: ['api'] });
    const port = await freePort();
    await system.startApp('api', 'api-2', { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` });
    origins = [system.origin, `http://127.0.0.1:${port}`];
  });
  afterAll(async () => system?.stop());

  it('a deactivated, reactivated or deleted source answers accordingly on the next request to any replica', async () => {
    const api = client(system, createUser(system).apiKey);
    const source = (await api.post('/sources', { component_code: HTTP_SOURCE })).body.data;
    const path = new URL(source.configured_props.http.endpoint_url).pathname;
    const post = async (origin: string): Promise<number> => (await fetch(`${origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status;
    const warm = async (status: number): Promise<void> => {
      for (const origin of origins) await eventually(async () => (await post(origin)) === status && (await post(origin)) === status, { what: `${status} from ${origin}` });
    };
    // The replica that made the change answers the next request so; the other within a second (an entry lives 3 s).
    const expectNext = async (status: number): Promise<void> => {
      expect(await post(origins[0])).toBe(status);
      await eventually(async () => (await post(origins[1])) === status, { what: `${status} from the other replica`, timeoutMs: 1_000, intervalMs: 20 });
    };

    await warm(200);
    expect((await api.put(`/sources/${source.id}`, { component_id: source.component_id, active: false })).status).toBe(200);
    await expectNext(404);
    await warm(404);
    expect((await api.put(`/sources/${source.id}`, { component_id: source.component_id })).status).toBe(200);
    await expectNext(200);
    await warm(200);
    expect((await api.del(`/sources/${source.id}`)).status).toBe(204);
    await expectNext(404);
  });
});
