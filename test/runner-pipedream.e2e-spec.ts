import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server } from 'node:http';
import { join } from 'node:path';
import { build } from 'esbuild';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * A Pipedream-style multi-file component (test/fixtures/widgets: an app file
 * with `@pipedream/platform` axios, `common/` modules composed by object
 * spread, `lodash/get.js`, propDefinitions with defaults, bound app methods
 * passed around as bare functions, hooks that call the API) deployed by
 * `component_url` through the real apps, against a local fake of the API it polls.
 */
const FIXTURES = join(__dirname, 'fixtures');

interface Widget {
  id: string;
  attributes: { name: string; created_at: string };
}

interface ApiCall {
  method: string;
  path: string;
  auth?: string;
  body?: Record<string, unknown>;
}

describe('runner: a multi-file Pipedream-style component end to end', () => {
  let system: System;
  let user: TestUser;
  let server: Server;
  let origin: string;
  const widgets: Widget[] = [];
  const calls: ApiCall[] = [];
  let hooks = 0;

  const addWidget = (n: number): void => {
    widgets.unshift({ id: `w${n}`, attributes: { name: `Widget ${n}`, created_at: new Date(Date.UTC(2024, 0, n)).toISOString() } });
  };

  const readBody = async (req: IncomingMessage): Promise<Record<string, unknown> | undefined> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
  };

  beforeAll(async () => {
    system = await startSystem({ TIMER_MIN_INTERVAL_SECONDS: '1' });
    user = createUser(system);
    for (let n = 1; n <= 5; n++) addWidget(n);
    server = createServer((req, res) => {
      void (async () => {
        const url = new URL(req.url ?? '/', 'http://x');
        if (url.pathname.startsWith('/components/')) {
          try {
            const text = readFileSync(join(FIXTURES, url.pathname.slice('/components/'.length)), 'utf8');
            return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(text);
          } catch {
            return void res.writeHead(404).end('not found');
          }
        }
        const call: ApiCall = { method: req.method ?? '', path: url.pathname, auth: req.headers.authorization, body: await readBody(req) };
        calls.push(call);
        const json = (status: number, body: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        if (call.auth !== 'Bearer key-1') return json(401, { error: 'unauthorized' });
        if (req.method === 'GET' && url.pathname === '/v1/folders/f1/widgets') {
          // newest first, two per page
          const start = Number(url.searchParams.get('cursor') ?? 0);
          const page = widgets.slice(start, start + 2);
          return json(200, { data: page, next: start + 2 < widgets.length ? String(start + 2) : null });
        }
        if (req.method === 'POST' && url.pathname === '/v1/hooks') return json(201, { id: `hook${++hooks}`, secret: `secret${hooks}` });
        if (req.method === 'DELETE' && url.pathname.startsWith('/v1/hooks/')) return json(204, {});
        return json(404, { error: 'no route' });
      })();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    server?.close();
    await system?.stop();
  });

  const api = () => client(system, user.apiKey);
  type Summary = { id: string; event: Record<string, unknown>; metadata: { name: string }; summary?: string };
  const summaries = async (sourceId: string, eventName?: string): Promise<Summary[]> => {
    const q = `limit=100&expand=event,summary${eventName !== undefined ? `&event_name=${encodeURIComponent(eventName)}` : ''}`;
    const res = await api().get(`/sources/${sourceId}/event_summaries?${q}`);
    return ((res.body?.data ?? []) as Summary[]).slice().reverse(); // oldest first
  };
  const waitFor = <T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 60_000) => eventually(fn, { what, timeoutMs, intervalMs: 200 });
  const auth = () => ({ $auth: { api_key: 'key-1', base_url: origin } });
  const componentUrl = (entry: string) => `${origin}/components/widgets/sources/${entry}/${entry}.mjs`;

  it('polls with the app\'s bound methods: deploy emits the newest items, runs emit only new ones, oldest first, deduped', async () => {
    const res = await api().post('/sources', { component_url: componentUrl('new-widget'), configured_props: { widgets: auth(), folderId: 'f1' } });
    expect(res.status).toBe(200);
    const s = res.body.data as { id: string; configured_props: Record<string, unknown> };
    // DEFAULT_POLLING_SOURCE_TIMER_INTERVAL of @pipedream/platform; maxItems from the app's propDefinition default
    expect(s.configured_props.timer).toEqual({ cron: null, interval_seconds: 900 });

    await waitFor('the deploy hook emits', async () => (await summaries(s.id, '')).length === 3);
    let events = await summaries(s.id, '');
    expect(events.map((e) => e.event.id)).toEqual(['w3', 'w4', 'w5']);
    expect(events.map((e) => e.summary)).toEqual(['New widget: Widget 3', 'New widget: Widget 4', 'New widget: Widget 5']);
    expect(events[0].event).toEqual(widgets.find((w) => w.id === 'w3'));
    expect((await summaries(s.id, '$logs')).map((l) => l.event.msg)).toContain('deploy: fetching the last 3 widgets');

    addWidget(6);
    addWidget(7);
    expect((await api().post(`/sources/${s.id}/run`)).status).toBe(202);
    await waitFor('the run emits the new widgets', async () => (await summaries(s.id, '')).length === 5);
    expect((await api().post(`/sources/${s.id}/run`)).status).toBe(202);
    await waitFor('the second run finds nothing new', async () => (await summaries(s.id, '$logs')).some((l) => l.event.msg === 'no new widgets'));
    events = await summaries(s.id, '');
    expect(events.map((e) => e.event.id)).toEqual(['w3', 'w4', 'w5', 'w6', 'w7']);
    const ids = events.map((e) => e.id);
    expect([...ids].sort((a, b) => Number(a.split('-')[0]) - Number(b.split('-')[0]) || Number(a.split('-')[1]) - Number(b.split('-')[1]))).toEqual(ids);
    expect(await summaries(s.id, '$errors')).toEqual([]);
    expect(calls.filter((c) => c.path === '/v1/folders/f1/widgets').every((c) => c.auth === 'Bearer key-1')).toBe(true);
  });

  it('runs the same component submitted as one esbuild bundle (npm imports external) as component_code', async () => {
    const out = await build({ entryPoints: [join(FIXTURES, 'widgets/sources/new-widget/new-widget.mjs')], bundle: true, format: 'esm', platform: 'node', packages: 'external', write: false, logLevel: 'silent' });
    const code = out.outputFiles[0].text;
    expect(code).toContain('from "@pipedream/platform"');
    const res = await api().post('/sources', { component_code: code, configured_props: { widgets: auth(), folderId: 'f1', maxItems: 2 } });
    expect(res.status).toBe(200);
    await waitFor('the deploy hook emits', async () => (await summaries(res.body.data.id, '')).length === 2);
    expect((await summaries(res.body.data.id, '')).map((e) => e.event.id)).toEqual(widgets.slice(0, 2).reverse().map((w) => w.id));
    expect((await api().del(`/sources/${res.body.data.id}`)).status).toBe(204);
  });

  it('with the default 1 MiB db cap, a db the actor state could not carry in one NATS message is a clear $errors event, and the source keeps working', async () => {
    const res = await api().post('/sources', { component_code: `module.exports = { name: "Big DB", version: "1", props: { db: "$.service.db" },
      async run(event) { const n = (this.db.get("n") ?? 0) + 1; this.db.set("n", n); if (event.size) this.db.set("big", "x".repeat(event.size)); this.$emit({ n }); } };` });
    expect(res.status).toBe(200);
    const id = res.body.data.id as string;
    expect((await api().post(`/sources/${id}/run`, { event: { size: 1_048_000 } })).status).toBe(202); // under DB_MAX_BYTES, over a 1 MB message with the rest of the state
    const [err] = await waitFor('the $errors event', async () => {
      const e = await summaries(id, '$errors');
      return e.length ? e : undefined;
    });
    expect(err.event).toMatchObject({ error: { name: 'DbSizeLimitError', message: expect.stringContaining('$.service.db size limit exceeded') }, original_event: { size: 1_048_000 } });
    expect((await api().post(`/sources/${id}/run`, { event: {} })).status).toBe(202);
    await waitFor('the next run', async () => (await summaries(id, '')).length === 1);
    // the failed run's earlier write (n = 1) was kept, its oversize one was not
    expect((await summaries(id, '')).map((e) => e.event)).toEqual([{ n: 2 }]);
  });

  it('an instant source: activate registers a webhook, respond() answers the caller, update and delete run deactivate', async () => {
    const res = await api().post('/sources', { component_url: componentUrl('new-widget-event'), configured_props: { widgets: auth(), folderId: 'f1' } });
    expect(res.status).toBe(200);
    const s = res.body.data as { id: string; component_id: string; configured_props: { http: { endpoint_url: string } } };
    const endpoint = s.configured_props.http.endpoint_url;
    const created = await waitFor('the activate hook', async () => calls.find((c) => c.method === 'POST' && c.path === '/v1/hooks'));
    expect(created.body).toEqual({ url: endpoint, folder_id: 'f1', events: ['widget.created'] });
    const secret = `secret${hooks}`;

    const send = (body: unknown, key = secret) => {
      const raw = JSON.stringify(body);
      return fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', 'x-widgets-signature': createHmac('sha256', key).update(raw).digest('hex') }, body: raw });
    };
    const ok = await waitFor('a signed delivery is answered', async () => {
      const r = await send({ id: 'evt1', type: 'widget.created', occurred_at: '1700000000' });
      return r.status === 200 ? r : undefined;
    });
    expect(ok.headers.get('x-widgets-ack')).toBe('evt1');
    expect(await ok.text()).toBe('ok');
    const bad = await send({ id: 'evt2', type: 'widget.created', occurred_at: 1 }, 'wrong');
    expect(bad.status).toBe(401);
    expect(await bad.json()).toEqual({ error: 'invalid signature' });
    expect((await send({ id: 'evt1', type: 'widget.created', occurred_at: '1700000000' })).status).toBe(200);
    expect((await send({ id: 'evt3', type: 'widget.created', occurred_at: '2023-11-14T22:13:21.000Z' })).status).toBe(200);
    await waitFor('the deliveries are emitted', async () => (await summaries(s.id, '')).length === 2);
    const events = await summaries(s.id, '');
    expect(events.map((e) => [e.event.id, e.summary])).toEqual([['evt1', 'widget.created evt1'], ['evt3', 'widget.created evt3']]);

    const before = calls.length;
    const put = await api().put(`/sources/${s.id}`, { component_id: s.component_id, configured_props: { widgets: auth(), folderId: 'f1', eventTypes: ['widget.updated'] } });
    expect(put.status).toBe(200);
    await waitFor('deactivate then activate', async () => calls.slice(before).filter((c) => c.path.startsWith('/v1/hooks')).length === 2);
    const [removed, added] = calls.slice(before).filter((c) => c.path.startsWith('/v1/hooks'));
    expect([removed.method, removed.path]).toEqual(['DELETE', `/v1/hooks/hook${hooks - 1}`]);
    expect([added.method, added.path, added.body?.events]).toEqual(['POST', '/v1/hooks', ['widget.updated']]);

    expect((await api().del(`/sources/${s.id}`)).status).toBe(204);
    await waitFor('deactivate on delete', async () => calls.find((c) => c.method === 'DELETE' && c.path === `/v1/hooks/hook${hooks}`));
  });

  it('a schedule source without run (timer prop from an app propDefinition) emits each timer event unchanged', async () => {
    const res = await api().post('/sources', { component_url: componentUrl('every-interval'), configured_props: { schedule: { intervalSeconds: 1 } } });
    expect(res.status).toBe(200);
    expect(res.body.data.configured_props.schedule).toEqual({ cron: null, interval_seconds: 1 });
    await waitFor('two timer events', async () => (await summaries(res.body.data.id, '')).length >= 2);
    const [first] = await summaries(res.body.data.id, '');
    expect(first.event).toEqual({ timestamp: expect.any(Number), interval_seconds: 1 });
    expect(await summaries(res.body.data.id, '$errors')).toEqual([]);
    expect((await api().del(`/sources/${res.body.data.id}`)).status).toBe(204);
  });

  it('a cron schedule source without run, run now, emits the event its timer would pass', async () => {
    const res = await api().post('/sources', { component_url: componentUrl('daily') });
    expect(res.status).toBe(200);
    expect(res.body.data.configured_props.schedule).toMatchObject({ cron: '0 11 * * *' });
    expect((await api().post(`/sources/${res.body.data.id}/run`)).status).toBe(202);
    const [event] = await waitFor('the manual run', async () => {
      const events = await summaries(res.body.data.id, '');
      return events.length ? events : undefined;
    });
    expect(event.event).toEqual({ timestamp: expect.any(Number), cron: '0 11 * * *' });
  });
});
