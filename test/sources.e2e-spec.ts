import { createHash } from 'node:crypto';
import { admin, client, createUser, TestUser } from './support/accounts';
import { desiredState, HTTP_SOURCE, storedCode, TIMER_SOURCE } from './support/components';
import { eventually, startSystem, System } from './support/system';

describe('sources', () => {
  let system: System;
  let user: TestUser;
  beforeAll(async () => {
    system = await startSystem({ TIMER_MIN_INTERVAL_SECONDS: '15', RECONCILE_INTERVAL_MS: '500' }, { apps: ['api'] });
    user = createUser(system);
  });
  afterAll(async () => system?.stop());

  it('creates an HTTP source from code: Source shape, endpoint URL, desired state in KV, code in the object store', async () => {
    const api = client(system, user.apiKey);
    const res = await api.post('/sources', { component_code: HTTP_SOURCE });
    expect(res.status).toBe(200);
    const s = res.body.data;
    expect(s).toEqual({
      id: expect.stringMatching(/^dc_/),
      user_id: user.id,
      component_id: expect.stringMatching(/^sc_/),
      configured_props: { http: { endpoint_url: expect.stringMatching(new RegExp(`^${system.origin}/e/en[a-z0-9]+$`)) } },
      active: true,
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
      name: 'test-http-source',
      name_slug: 'test-http-source',
    });
    const state = await eventually(() => desiredState(system, s.id), { what: 'desired state' });
    const hash = createHash('sha256').update(HTTP_SOURCE).digest('hex');
    expect(state).toEqual({
      sourceId: s.id,
      ownerId: user.id,
      userId: user.id,
      rev: 1,
      active: true,
      componentId: s.component_id,
      codeHash: hash,
      configuredProps: {},
      endpointKey: s.configured_props.http.endpoint_url.split('/e/')[1],
      endpointUrl: s.configured_props.http.endpoint_url,
      runTimeoutMs: expect.any(Number),
      updatedAtMs: expect.any(Number),
    });
    expect(await storedCode(system, hash)).toBe(HTTP_SOURCE);
  });

  it('creates a timer source from an existing component id with a name; slugs auto-increment', async () => {
    const api = client(system, user.apiKey);
    const comp = await api.post('/components', { component_code: TIMER_SOURCE });
    expect(comp.status).toBe(200);
    const a = await api.post('/sources', { component_id: comp.body.data.id, name: 'My Timer!', configured_props: { timer: { intervalSeconds: 30 } } });
    expect(a.status).toBe(200);
    expect(a.body.data.name).toBe('My Timer!');
    expect(a.body.data.name_slug).toBe('my-timer');
    expect(a.body.data.configured_props).toEqual({ timer: { cron: null, interval_seconds: 30 } });
    const b = await api.post('/sources', { component_id: comp.body.data.id, name: 'my timer', configured_props: { timer: { cron: '*/5 * * * *' } } });
    expect(b.body.data.name_slug).toBe('my-timer-1');
    expect(b.body.data.configured_props).toEqual({ timer: { cron: '*/5 * * * *', interval_seconds: 300 } });
    const c = await api.post('/sources', { component_id: comp.body.data.id, name: 'my timer' });
    expect(c.body.data.name_slug).toBe('my-timer-2');
    expect(c.body.data.configured_props).toEqual({ timer: { cron: null, interval_seconds: 60 } });
    const state = await eventually(() => desiredState(system, b.body.data.id));
    expect(state.configuredProps).toEqual({ timer: { cron: '*/5 * * * *' } });
  });

  it('updates and deletes: rev moves, desired state follows, delete removes it', async () => {
    const api = client(system, user.apiKey);
    const created = (await api.post('/sources', { component_code: TIMER_SOURCE, name: 'upd' })).body.data;
    await eventually(() => desiredState(system, created.id));
    const upd = await api.put(`/sources/${created.id}`, { component_id: created.component_id, active: false, configured_props: { timer: { intervalSeconds: 120 } } });
    expect(upd.status).toBe(200);
    expect(upd.body.data).toMatchObject({ id: created.id, active: false, configured_props: { timer: { cron: null, interval_seconds: 120 } }, name: 'upd', name_slug: 'upd' });
    const state = await eventually(async () => {
      const st = await desiredState(system, created.id);
      return st && st.rev === 2 ? st : undefined;
    });
    expect(state.active).toBe(false);
    expect(state.configuredProps).toEqual({ timer: { intervalSeconds: 120 } });
    expect((await api.del(`/sources/${created.id}`)).status).toBe(204);
    await eventually(async () => (await desiredState(system, created.id)) === undefined, { what: 'KV delete' });
    expect((await api.get(`/sources/${created.id}`)).status).toBe(404);
    expect((await api.put(`/sources/${created.id}`, {})).status).toBe(404);
    expect((await api.del(`/sources/${created.id}`)).status).toBe(404);
  });

  it('lists my sources newest first with pagination, without user_id', async () => {
    const u = createUser(system);
    const api = client(system, u.apiKey);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await api.post('/sources', { component_code: HTTP_SOURCE })).body.data.id);
    const p1 = await api.get('/users/me/sources?limit=2');
    expect(p1.status).toBe(200);
    expect(p1.body.page_info).toEqual({ total_count: 3, count: 2, start_cursor: expect.any(String), end_cursor: expect.any(String) });
    expect(p1.body.data.map((s: { id: string }) => s.id)).toEqual([ids[2], ids[1]]);
    expect(p1.body.data[0].user_id).toBeUndefined();
    expect(p1.body.data[0].name_slug).toBe('test-http-source-2');
    const p2 = await api.get(`/users/me/sources?limit=2&after=${p1.body.page_info.end_cursor}`);
    expect(p2.body.data.map((s: { id: string }) => s.id)).toEqual([ids[0]]);
  });

  /** A new org with two new members. */
  const orgOfTwo = (name: string) => {
    const member = createUser(system);
    const member2 = createUser(system);
    const org = admin(system, ['orgs', 'create', '--name', `${name} org`, '--orgname', `${name}-${member.id.slice(3, 12)}`]);
    for (const u of [member, member2]) admin(system, ['orgs', 'add-member', '--org', org.id, '--user', u.id]);
    return { org, member, member2 };
  };

  it('creates sources in an org for members; everyone else gets 404', async () => {
    const { org, member, member2 } = orgOfTwo('src');
    const other = createUser(system);
    const m = client(system, member.apiKey);
    const o = client(system, other.apiKey);
    const created = await m.post(`/sources?org_id=${org.id}`, { component_code: HTTP_SOURCE });
    expect(created.status).toBe(200);
    expect((await m.get(`/orgs/${org.id}/sources`)).body.data.map((s: { id: string }) => s.id)).toEqual([created.body.data.id]);
    expect((await m.get('/users/me/sources')).body.data).toEqual([]);
    expect(created.body.data.user_id).toBe(member.id);
    const state = await eventually(() => desiredState(system, created.body.data.id));
    expect(state).toMatchObject({ ownerId: org.id, userId: member.id });
    // another member reaches it by id, lists it, updates it
    const m2 = client(system, member2.apiKey);
    expect((await m2.get(`/sources/${created.body.data.id}`)).status).toBe(200);
    expect((await m2.get(`/components/${created.body.data.component_id}`)).status).toBe(200);
    expect((await m2.get(`/orgs/${org.id}/sources`)).body.page_info.total_count).toBe(1);
    expect((await m2.put(`/sources/${created.body.data.id}`, { component_id: created.body.data.component_id, name: 'renamed by member 2' })).body.data.name_slug).toBe('renamed-by-member-2');
    expect((await o.post(`/sources?org_id=${org.id}`, { component_code: HTTP_SOURCE })).status).toBe(404);
    expect((await o.get(`/orgs/${org.id}/sources`)).status).toBe(404);
    expect((await o.get(`/sources/${created.body.data.id}`)).status).toBe(404);
    expect((await o.put(`/sources/${created.body.data.id}`, { component_id: created.body.data.component_id, active: false })).status).toBe(404);
    expect((await o.del(`/sources/${created.body.data.id}`)).status).toBe(404);
    expect((await o.get(`/components/${created.body.data.component_id}`)).status).toBe(404);
    expect((await o.post('/sources', { component_id: created.body.data.component_id })).status).toBe(404);
  });

  it("saves a member's own component in the org when they deploy it there, so the other members can read and keep it", async () => {
    const { org, member, member2 } = orgOfTwo('copy');
    const m = client(system, member.apiKey);
    const m2 = client(system, member2.apiKey);
    const personal = (await m.post('/components', { component_code: HTTP_SOURCE })).body.data;
    const created = (await m.post(`/sources?org_id=${org.id}`, { component_id: personal.id })).body.data;
    expect(created.component_id).not.toBe(personal.id);
    const copy = (await m2.get(`/components/${created.component_id}`)).body.data;
    expect(copy).toEqual(expect.objectContaining({ code_hash: personal.code_hash, name: personal.name }));
    expect((await m2.get(`/components/${personal.id}`)).status).toBe(404);
    const kept = await m2.put(`/sources/${created.id}`, { component_id: created.component_id, name: 'kept by member 2' });
    expect(kept.status).toBe(200);
    expect(kept.body.data.component_id).toBe(created.component_id);
  });

  it('gives concurrent creates with the same name distinct slugs', async () => {
    const api = client(system, createUser(system).apiKey);
    const comp = (await api.post('/components', { component_code: HTTP_SOURCE })).body.data.id;
    const results = await Promise.all(Array.from({ length: 6 }, () => api.post('/sources', { component_id: comp, name: 'Same Name' })));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const slugs = results.map((r) => r.body.data.name_slug).sort();
    expect(slugs).toEqual(['same-name', 'same-name-1', 'same-name-2', 'same-name-3', 'same-name-4', 'same-name-5']);
  });
});
