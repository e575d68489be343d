import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admin, client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

type Summary = { id: string; event: Record<string, unknown> };

/** The shipped registry components, deployed and run end to end (api + runner + delivery). */
describe('registry components', () => {
  let system: System;
  let user: TestUser;
  let api: ReturnType<typeof client>;
  let feed: Server;
  let feedUrl: string;
  let feedXml = '';

  const registryId = async (key: string): Promise<string> => {
    const res = await api.get(`/components/registry/${key}`);
    expect(res.status).toBe(200);
    return res.body.data.id;
  };
  const events = async (sourceId: string, n: number): Promise<Summary[]> =>
    eventually(
      async () => {
        const res = await api.get(`/sources/${sourceId}/event_summaries?limit=100&expand=event`);
        return res.status === 200 && res.body.data.length >= n ? (res.body.data as Summary[]) : undefined;
      },
      { timeoutMs: 30_000, what: `${n} event(s) of ${sourceId}` },
    );

  beforeAll(async () => {
    system = await startSystem({ TIMER_MIN_INTERVAL_SECONDS: '1' });
    user = createUser(system);
    api = client(system, user.apiKey);
    feed = createServer((_req, res) => void res.writeHead(200, { 'content-type': 'application/rss+xml' }).end(feedXml));
    await new Promise<void>((r) => feed.listen(0, '127.0.0.1', r));
    feedUrl = `http://127.0.0.1:${(feed.address() as { port: number }).port}/feed.xml`;
  });
  afterAll(async () => {
    feed?.close();
    await system?.stop();
  });

  it('http-custom-response answers with the configured status and body and emits the request', async () => {
    const src = await api.post('/sources', { component_id: await registryId('http-custom-response'), configured_props: { status: 201, body: '{"created":true}' } });
    expect(src.status).toBe(200);
    const url = src.body.data.configured_props.http.endpoint_url;
    const res = await eventually(async () => {
      const r = await fetch(`${url}/hooks?x=1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ hello: 'world' }) });
      return r.status === 201 ? r : undefined;
    }, { timeoutMs: 30_000, what: 'custom response' });
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(await res.json()).toEqual({ created: true });
    const [ev] = await events(src.body.data.id, 1);
    expect(ev.event).toMatchObject({ method: 'POST', query: { x: '1' }, body: { hello: 'world' } });
  });

  it('http-request-counter counts requests in $.service.db', async () => {
    const src = await api.post('/sources', { component_id: await registryId('http-request-counter') });
    const url = src.body.data.configured_props.http.endpoint_url;
    await eventually(async () => (await fetch(url, { method: 'POST' })).status === 200, { timeoutMs: 30_000, what: 'endpoint' });
    await fetch(url, { method: 'POST' });
    await fetch(url, { method: 'GET' });
    const evs = await events(src.body.data.id, 3);
    expect(evs.map((e) => e.event.count).sort()).toEqual([1, 2, 3]);
  });

  it('schedule-interval emits on its interval; schedule-cron deploys with its cron and emits when run', async () => {
    const interval = await api.post('/sources', { component_id: await registryId('schedule-interval'), configured_props: { timer: { intervalSeconds: 1 } } });
    expect(interval.body.data.configured_props).toEqual({ timer: { cron: null, interval_seconds: 1 } });
    const ticks = await events(interval.body.data.id, 2);
    expect(ticks[0].event).toMatchObject({ timestamp: expect.any(Number), interval_seconds: 1 });
    const cron = await api.post('/sources', { component_id: await registryId('schedule-cron') });
    expect(cron.body.data.configured_props).toEqual({ timer: { cron: '0 * * * *', interval_seconds: 3600 } });
    await eventually(async () => (await api.post(`/sources/${cron.body.data.id}/run`, { event: { timestamp: 1700000000, cron: '0 * * * *' } })).status === 202);
    const [ev] = await events(cron.body.data.id, 1);
    expect(ev.event).toEqual({ timestamp: 1700000000, cron: '0 * * * *' });
    await api.put(`/sources/${interval.body.data.id}`, { component_id: interval.body.data.component_id, active: false });
  });

  it('rss-new-item-in-feed emits new RSS items once, oldest first, and picks up new ones', async () => {
    const item = (n: number): string => `<item><title>Post ${n}</title><link>https://blog.test/${n}</link><guid>post-${n}</guid><pubDate>${new Date(Date.UTC(2024, 0, n)).toUTCString()}</pubDate></item>`;
    feedXml = `<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>${item(2)}${item(1)}</channel></rss>`;
    const src = await api.post('/sources', { component_id: await registryId('rss-new-item-in-feed'), configured_props: { url: feedUrl, timer: { intervalSeconds: 1 } } });
    expect(src.status).toBe(200);
    const first = await events(src.body.data.id, 2);
    // newest first in summaries; emitted oldest first
    expect(first.map((e) => e.event.title)).toEqual(['Post 2', 'Post 1']);
    feedXml = `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>Blog</title>
      <entry><title>Post &amp; 3</title><link href="https://blog.test/3"/><id>post-3</id><updated>2024-01-03T00:00:00Z</updated></entry>
      <entry><title>Post 2</title><link href="https://blog.test/2"/><id>post-2</id><updated>2024-01-02T00:00:00Z</updated></entry></feed>`;
    const next = await events(src.body.data.id, 3);
    expect(next[0].event).toMatchObject({ title: 'Post & 3', link: 'https://blog.test/3', id: 'post-3' });
    await new Promise((r) => setTimeout(r, 2500));
    const after = await api.get(`/sources/${src.body.data.id}/event_summaries?limit=100`);
    expect(after.body.data).toHaveLength(3);
    await api.put(`/sources/${src.body.data.id}`, { component_id: src.body.data.component_id, active: false });
  });

  it('operators publish to the registry with the admin CLI: idempotent, semver and key rules, versions never re-used', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'reg-'));
    const file = join(dir, 'echo.mjs');
    const code = (version: string, body = 'this.$emit(event);'): string =>
      `export default { key: "acme-echo", name: "Echo", version: "${version}", props: { http: "$.interface.http" }, async run(event) { ${body} } };`;
    writeFileSync(file, code('1.0.0'));
    const first = admin(system, ['registry', 'publish', file]);
    expect(first).toMatchObject({ key: 'acme-echo', version: '1.0.0', created: true, id: expect.stringMatching(/^sc_/) });
    expect(admin(system, ['registry', 'publish', file])).toMatchObject({ id: first.id, created: false });
    expect((await api.get('/components/registry/acme-echo')).body.data.id).toBe(first.id);
    writeFileSync(file, code('1.0.0', 'this.$emit({ changed: true });'));
    expect(() => admin(system, ['registry', 'publish', file])).toThrow(/already published with different code; bump the version/);
    writeFileSync(file, code('1.1.0', 'this.$emit({ changed: true });'));
    const second = admin(system, ['registry', 'publish', file]);
    expect((await api.get('/components/registry/acme-echo')).body.data).toMatchObject({ id: second.id, version: '1.1.0' });
    writeFileSync(file, code('1.2'));
    expect(() => admin(system, ['registry', 'publish', file])).toThrow(/semantic version/);
    writeFileSync(file, code('1.3.0').replace('acme-echo', 'Echo'));
    expect(() => admin(system, ['registry', 'publish', file])).toThrow(/must look like <app_name_slug>-<slugified-component-name>/);
    const list = admin(system, ['registry', 'list']) as unknown as { components: { key: string; version: string }[] };
    expect(list.components).toEqual(expect.arrayContaining([{ id: second.id, key: 'acme-echo', version: '1.1.0', name: 'Echo' }, expect.objectContaining({ key: 'rss-new-item-in-feed' })]));
    // the shipped registry re-seeds idempotently
    const seeded = admin(system, ['registry', 'seed']) as unknown as { published: { key: string; created: boolean }[] };
    expect(seeded.published.every((p) => !p.created)).toBe(true);
    expect(seeded.published.map((p) => p.key).sort()).toEqual(['http-custom-response', 'http-request-counter', 'rss-new-item-in-feed', 'schedule-cron', 'schedule-interval']);
    // a --dir that is not a directory is bad input, not an empty registry
    expect(() => admin(system, ['registry', 'seed', '--dir', join(dir, 'missing')])).toThrow(/failed \(1\): error: --dir must be a directory of component files, got ".*missing" \(.*missing is not a directory\)/);
    expect(() => admin(system, ['registry', 'seed', '--dir', file])).toThrow(/--dir must be a directory of component files, got ".*echo\.mjs"/);
    // a deployed registry component runs
    const src = await api.post('/sources', { component_id: second.id });
    expect(src.status).toBe(200);
    expect(readFileSync(file, 'utf8')).toContain('1.3.0');
  });
});
