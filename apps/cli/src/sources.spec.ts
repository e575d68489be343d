import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { ApiClient } from './api-client';
import { propsAsInput, resolveSource, Source } from './sources';

const source = (id: string, name: string, name_slug: string): Source => ({ id, name, name_slug, component_id: 'sc_1', configured_props: {}, active: true, created_at: 1, updated_at: 1 });
const MINE = [source('dc_a', 'Poller', 'poller'), source('dc_b', 'Poller', 'poller-1'), source('dc_c', 'Hook', 'hook')];

describe('source references', () => {
  let server: Server;
  let client: ApiClient;
  beforeAll(async () => {
    server = createServer((req, res) => {
      const data = req.url?.startsWith('/v1/users/me/sources') ? MINE : req.url?.startsWith('/v1/orgs/o_1/sources') ? [source('dc_o', 'Hook', 'hook')] : undefined;
      res.setHeader('content-type', 'application/json');
      if (!data) return res.writeHead(404).end(JSON.stringify({ error: 'source dc_zzz not found', code: 'not_found' }));
      res.end(JSON.stringify({ page_info: { total_count: data.length, count: data.length, start_cursor: 'x', end_cursor: 'y' }, data }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    client = new ApiClient({ profile: 'default', apiKey: 'k', apiBaseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, configPath: '/dev/null' });
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  it('resolves a name_slug, a unique name (any case) and refuses an ambiguous name', async () => {
    expect((await resolveSource(client, 'poller-1')).id).toBe('dc_b');
    expect((await resolveSource(client, 'hook')).id).toBe('dc_c');
    expect((await resolveSource(client, 'HOOK')).id).toBe('dc_c');
    await expect(resolveSource(client, 'Poller')).rejects.toThrow('2 sources are named "Poller": use an id or a name_slug (dc_a poller, dc_b poller-1)');
    expect((await resolveSource(client, 'poller')).id).toBe('dc_a');
  });

  it('prefers the org, names unknown sources and unknown ids clearly', async () => {
    expect((await resolveSource(client, 'hook', 'o_1')).id).toBe('dc_o');
    await expect(resolveSource(client, 'nope')).rejects.toThrow('source "nope" not found: no source in your account has that id, name or name_slug (see `pd list sources`)');
    await expect(resolveSource(client, 'dc_zzz')).rejects.toThrow('source "dc_zzz" not found (HTTP 404)');
  });

  it('turns the props view back into input for PUT', () => {
    expect(propsAsInput({ http: { endpoint_url: 'http://x/e/1' }, timer: { cron: null, interval_seconds: 60 }, cron: { cron: '0 * * * *', interval_seconds: 3600, timezone: 'UTC' }, token: '********', n: 1 })).toEqual({
      timer: { intervalSeconds: 60 },
      cron: { cron: '0 * * * *', timezone: 'UTC' },
      token: '********',
      n: 1,
    });
  });
});
