import { ApiClient } from './api-client';
import { listServer } from './list-server.spec-helper';
import { propsAsInput, resolveSource, Source } from './sources';

const source = (id: string, name: string, name_slug: string): Source => ({ id, name, name_slug, component_id: 'sc_1', configured_props: {}, active: true, created_at: 1, updated_at: 1 });
const MINE = [source('dc_a', 'Poller', 'poller'), source('dc_b', 'Poller', 'poller-1'), source('dc_c', 'Hook', 'hook')];

describe('source references', () => {
  let client: ApiClient;
  let close: () => void;
  beforeAll(async () => {
    const lists = (path: string) => (path.startsWith('/v1/users/me/sources') ? MINE : path.startsWith('/v1/orgs/o_1/sources') ? [source('dc_o', 'Hook', 'hook')] : undefined);
    ({ client, close } = await listServer(lists, 'source dc_zzz not found'));
  });
  afterAll(() => close());

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
