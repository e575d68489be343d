import { admin, client, createUser, TestUser } from './support/accounts';
import { pd, tempHome } from './support/pd';
import { eventually, startSystem, System } from './support/system';
import { Emitter, insertSource } from './events.helpers';

/**
 * Requests written exactly as Pipedream's REST API documentation writes them (and as the spec and
 * docs/api.md, docs/events.md describe their answers), where an earlier audit found the service
 * answering otherwise.
 */
describe("Pipedream's documented request forms, to the letter", () => {
  let system: System;
  let user: TestUser;
  let other: TestUser;
  let emitter: Emitter;

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api', 'delivery'] });
    user = createUser(system);
    other = createUser(system);
    emitter = await Emitter.connect(system);
  });
  afterAll(async () => {
    await emitter?.close();
    await system?.stop();
  });

  it('deploys a registry component named by `key`, as the REST API RSS example does', async () => {
    const api = client(system, user.apiKey);
    const registry = await api.get('/components/registry/rss-new-item-in-feed');
    expect(registry.status).toBe(200);
    // The example's body, word for word (the feed URL made local: the test needs no network).
    const res = await api.post('/sources', { key: 'rss-new-item-in-feed', name: 'test-rss', configured_props: { url: 'http://127.0.0.1:9/feed.xml', timer: { intervalSeconds: 60 } } });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      id: expect.stringMatching(/^dc_/),
      user_id: user.id,
      component_id: registry.body.data.id,
      configured_props: { url: 'http://127.0.0.1:9/feed.xml', timer: { cron: null, interval_seconds: 60 }, maxItems: 20 },
      active: true,
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
      name: 'test-rss',
      name_slug: 'test-rss',
    });

    // A key of your own wins over the registry's; component_id wins over key; in the query string too.
    const code = 'module.exports = { key: "rss-new-item-in-feed", name: "Mine", version: "0.0.1", props: { n: { type: "integer", optional: true } }, async run() {} };';
    const mine = await api.post('/components', { component_code: code });
    expect((await api.post('/sources', { key: 'rss-new-item-in-feed' })).body.data.component_id).toBe(mine.body.data.id);
    expect((await api.post('/sources?key=rss-new-item-in-feed')).body.data.component_id).toBe(mine.body.data.id);
    expect((await api.post('/sources', { key: 'rss-new-item-in-feed', component_id: registry.body.data.id, configured_props: { url: 'http://127.0.0.1:9/' } })).body.data.component_id).toBe(registry.body.data.id);
    // An update may name its component by key as well.
    const put = await api.put(`/sources/${res.body.data.id}`, { key: 'rss-new-item-in-feed', active: false });
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({ component_id: mine.body.data.id, active: false });

    const unknown = await api.post('/sources', { key: 'no-such-component' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'component no-such-component not found', code: 'not_found', details: { key: 'no-such-component' } });
    // Another account's key is not yours: its namespace is never searched.
    const theirs = await client(system, other.apiKey).post('/components', { component_code: code.replace('rss-new-item-in-feed', 'only-theirs') });
    expect(theirs.status).toBe(200);
    expect((await api.post('/sources', { key: 'only-theirs' })).status).toBe(404);
  });

  it('streams a source at https://api…/sources/{id}/sse, the address Pipedream documents', async () => {
    const src = await insertSource(system, user.id);
    const ac = new AbortController();
    const res = await fetch(`${system.origin}/sources/${src}/sse`, { headers: { authorization: `Bearer ${user.apiKey}` }, signal: ac.signal });
    try {
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      let text = '';
      const reading = (async () => {
        const decoder = new TextDecoder();
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) text += decoder.decode(chunk, { stream: true });
      })().catch(() => undefined);
      await eventually(async () => text.includes(':sse-handshake'), { what: 'the handshake' });
      const ev = await emitter.emit(src, user.id, { title: 'Example post' });
      await eventually(async () => text.includes(`id: ${ev.id}`), { what: 'the event on the stream' });
      const data = text.split('\n').find((l) => l.startsWith('data: '))!;
      expect(JSON.parse(data.slice(6))).toMatchObject({ id: ev.id, event: { title: 'Example post' }, metadata: { name: '', emitter_id: src } });
      ac.abort();
      await reading;
    } finally {
      ac.abort();
    }
    expect((await fetch(`${system.origin}/sources/${src}/sse`)).status).toBe(401);
    const foreign = await fetch(`${system.origin}/sources/${src}/sse`, { headers: { authorization: `Bearer ${other.apiKey}` } });
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toEqual({ error: `source ${src} not found`, code: 'not_found', details: { id: src } });
  });

  it('gives event lists the edge events’ ids as cursors, and takes an event id as after / before', async () => {
    const api = client(system, user.apiKey);
    const src = await insertSource(system, user.id);
    const base = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await emitter.emit(src, user.id, { i }, { id: `${base + i}-0`, idMs: base + i })).id);
    await eventually(async () => (await api.get(`/sources/${src}/event_summaries`)).body?.page_info?.total_count === 5, { what: '5 indexed events' });
    const newest = [...ids].reverse();

    // As Pipedream's example answer shows: "start_cursor": "1606511826306-0", the id of the first event of the page.
    const page1 = await api.get(`/sources/${src}/event_summaries?limit=2`);
    expect(page1.body.page_info).toEqual({ total_count: 5, count: 2, start_cursor: newest[0], end_cursor: newest[1] });
    const page2 = await api.get(`/sources/${src}/event_summaries?limit=2&after=${page1.body.page_info.end_cursor}`);
    expect(page2.body.data.map((e: { id: string }) => e.id)).toEqual(newest.slice(2, 4));
    expect(page2.body.page_info).toEqual({ total_count: 5, count: 2, start_cursor: newest[2], end_cursor: newest[3] });
    const back = await api.get(`/sources/${src}/event_summaries?limit=2&before=${page2.body.page_info.start_cursor}`);
    expect(back.body.data.map((e: { id: string }) => e.id)).toEqual(newest.slice(0, 2));
    // The cursor form earlier versions returned still works.
    const legacy = Buffer.from(JSON.stringify([base + 4, '0'])).toString('base64url');
    expect((await api.get(`/sources/${src}/event_summaries?limit=1&after=${legacy}`)).body.data[0].id).toBe(newest[1]);
    expect((await api.get(`/sources/${src}/event_summaries?after=12x-0`)).status).toBe(400);
  });

  it('lists webhooks with their creator, as the Webhook object of the spec carries user_id', async () => {
    const api = client(system, other.apiKey);
    const created = (await api.post('/webhooks?url=https://endpoint.example.com&name=name&description=description')).body.data;
    expect(created).toMatchObject({ user_id: other.id });
    const listed = await api.get('/users/me/webhooks');
    expect(listed.body.data.find((w: { id: string }) => w.id === created.id)).toEqual({
      id: created.id,
      user_id: other.id,
      name: 'name',
      description: 'description',
      url: 'https://endpoint.example.com',
      active: true,
      created_at: created.created_at,
      updated_at: created.updated_at,
    });
    expect((await api.get(`/webhooks/${created.id}`)).body.data.user_id).toBe(other.id);
  });

  it('lists subscriptions oldest first, also those made within one second', async () => {
    const api = client(system, user.apiKey);
    const wh = (await api.post('/webhooks', { url: 'https://hooks.example.com/a' })).body.data.id as string;
    const made: string[] = [];
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) {
      const src = await insertSource(system, user.id);
      made.push((await api.post(`/subscriptions?emitter_id=${src}&listener_id=${wh}&event_name=${name}`)).body.data.id);
    }
    const listed = (await api.get('/users/me/subscriptions')).body.data.map((s: { id: string }) => s.id);
    expect(listed.filter((id: string) => made.includes(id))).toEqual(made);
  });

  it('declares these forms in the OpenAPI document, as Pipedream operations (not extensions)', async () => {
    type Op = { 'x-extension'?: boolean; requestBody?: { content: Record<string, { schema: { properties: Record<string, unknown> } }> } };
    const doc = (await (await fetch(`${system.baseUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, Op>> };
    for (const [path, method] of [['/sources/{id}/sse', 'get'], ['/v1/workspaces/{org_id}', 'get'], ['/v1/workspaces/{org_id}/subscriptions', 'get'], ['/v1/users/me/workspaces', 'get']]) {
      const op = doc.paths[path]?.[method];
      expect([path, op !== undefined, op?.['x-extension']]).toEqual([path, true, undefined]);
    }
    for (const [path, method] of [['/v1/sources', 'post'], ['/v1/sources/{id}', 'put']]) {
      expect(Object.keys(doc.paths[path][method].requestBody!.content['application/json'].schema.properties)).toContain('key');
    }
  });

  it('answers GET /users/me/workspaces, GET /workspaces/{org_id} and GET /workspaces/{org_id}/subscriptions for members only', async () => {
    const org = admin(system, ['orgs', 'create', '--name', 'My Workspace', '--orgname', `ws-${Date.now()}`, '--email', 'ws@example.com']);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', user.id]);
    const api = client(system, user.apiKey);
    expect((await api.get(`/workspaces/${org.id}`)).body).toEqual({ data: { id: org.id, orgname: org.orgname, name: 'My Workspace', email: 'ws@example.com' } });
    expect((await api.get('/users/me/workspaces')).body).toEqual({ data: [{ id: org.id, orgname: org.orgname, name: 'My Workspace' }] });
    expect((await client(system, other.apiKey).get('/users/me/workspaces')).body).toEqual({ data: [] });

    const src = await insertSource(system, org.id, user.id);
    const wh = (await api.post(`/webhooks?org_id=${org.id}`, { url: 'https://hooks.example.com/ws' })).body.data.id as string;
    const sub = (await api.post(`/subscriptions?org_id=${org.id}&emitter_id=${src}&listener_id=${wh}`)).body.data;
    const viaWorkspaces = await api.get(`/workspaces/${org.id}/subscriptions`);
    expect(viaWorkspaces.body).toEqual({ data: [sub] });
    expect(viaWorkspaces.body).toEqual((await api.get(`/orgs/${org.id}/subscriptions`)).body);

    const outsider = client(system, other.apiKey);
    for (const path of [`/workspaces/${org.id}`, `/workspaces/${org.id}/subscriptions`, '/workspaces/o_nope']) {
      const res = await outsider.get(path);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ code: 'not_found' });
    }
  });

  it('lists the event streams of sources with `pd list streams` (and `pd list st`, `pd list so`), as Pipedream\'s CLI reference shows', async () => {
    const home = tempHome();
    const env = { PD_API_BASE_URL: system.baseUrl, PD_API_KEY: other.apiKey };
    const api = client(system, other.apiKey);
    const sc = (await api.post('/components', { component_code: 'module.exports = { name: "Hook", version: "1", props: { http: "$.interface.http" }, async run() {} };' })).body.data.id;
    const src = (await api.post('/sources', { component_id: sc, name: 'http' })).body.data;
    const human = await pd(['list', 'streams'], home, env);
    expect(human.code).toBe(0);
    const lines = human.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/));
    expect(lines).toEqual([['NAME', 'TYPE', 'VISIBILITY', 'SSE'], ['http', 'http', 'private', `${system.origin}/sse/dc/${src.id}/emits`]]);
    const asJson = await pd(['list', 'st', '--json'], home, env);
    expect(JSON.parse(asJson.stdout)).toEqual([{ id: src.id, name: 'http', type: 'http', visibility: 'private', sse: `${system.origin}/sse/dc/${src.id}/emits` }]);
    const so = await pd(['list', 'so', '--json'], home, env);
    expect(JSON.parse(so.stdout).map((s: { id: string }) => s.id)).toEqual([src.id]);
  });
});
