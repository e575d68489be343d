import { existsSync, rmSync } from 'node:fs';
import { createServer, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pd, pdSpawn, tempHome } from './support/pd';
import { eventually } from './support/system';

const MiB = Buffer.alloc(1024 * 1024, 'a');

/** Writes `head` and then MiB after MiB for as long as the client reads. */
function endless(res: ServerResponse, status: number, type: string, head: string): void {
  res.writeHead(status, { 'content-type': type });
  res.write(head);
  const pump = (): void => {
    while (!res.destroyed && res.write(MiB));
  };
  res.on('drain', pump);
  pump();
}

/**
 * A server at api_base_url that is not this service, or is hostile: an endless answer, an endless error,
 * event streams whose one message never ends, that never answer, or that trickle bytes without a line.
 */
function hostileApi(): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const source = /^\/v1\/sources\/(dc_[a-z]+)$/.exec(path)?.[1];
    if (path === '/v1/users/me') return res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    if (path === '/v1/users/me/sources') return endless(res, 200, 'application/json', '{"data":"');
    if (path === '/v1/orgs/o_broken/sources') return endless(res, 500, 'application/json', '{"error":"');
    if (source) return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: { id: source, name: source, name_slug: source, component_id: 'sc_1', configured_props: {}, active: true } }));
    if (path.endsWith('/event_summaries')) return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ page_info: { total_count: 0, count: 0, start_cursor: null, end_cursor: null }, data: [] }));
    if (path === '/sse/dc/dc_flood/emits') return endless(res, 200, 'text/event-stream', ':hello\n\ndata: ');
    if (path === '/sse/dc/dc_silent/emits') return; // takes the connection, never answers
    if (path === '/sse/dc/dc_trickle/emits') {
      res.writeHead(200, { 'content-type': 'text/event-stream' }).write(':hello\n\n');
      const t = setInterval(() => res.write('x'), 1000);
      return res.on('close', () => clearInterval(t));
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not found', code: 'not_found' }));
  });
}

describe('pd against a hostile server at api_base_url', () => {
  let server: Server;
  let home: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    server = hostileApi();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    home = tempHome();
    env = { PD_API_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, PD_API_KEY: 'pd_any' };
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('refuses an answer without end in one line instead of reading it until memory runs out', async () => {
    const list = await pd(['list', 'sources'], home, env);
    expect(list.code).toBe(1);
    expect(list.stdout).toBe('');
    expect(list.stderr).toBe(`Error: the answer to GET ${env.PD_API_BASE_URL}/users/me/sources?limit=100 is larger than 128 MiB, more than any answer of this API: is api_base_url ${env.PD_API_BASE_URL} right?\n`);
    // An error answer is read as far as its first 64 KiB.
    const error = await pd(['list', 'sources', '--org', 'o_broken'], home, env);
    expect(error.code).toBe(1);
    expect(error.stderr.trim().split('\n')).toHaveLength(1);
    expect(error.stderr).toMatch(/^Error: HTTP 500: \{"error":"a{100}/);
  });

  it('saves no profile for a server that answers JSON but no user', async () => {
    const login = await pd(['login', '--api-key', 'pd_any', '--api-base-url', env.PD_API_BASE_URL], home);
    expect([login.code, login.stdout, login.stderr]).toEqual([1, '', `Error: GET ${env.PD_API_BASE_URL}/users/me did not answer a user: is api_base_url ${env.PD_API_BASE_URL} right? (nothing was saved)\n`]);
    expect(existsSync(join(home, '.config', 'pipedream', 'config'))).toBe(false);
  });

  it('ends a followed stream whose message never ends, and one that never answers, with an error', async () => {
    const [flood, silent] = await Promise.all([pd(['events', '-f', 'dc_flood'], home, env), pd(['events', '-f', 'dc_silent'], home, env)]);
    expect(flood.code).toBe(1);
    expect(flood.stderr).toMatch(/\nError: a message of the event stream \/sse\/dc\/dc_flood\/emits\?expand=summary is larger than 128 MiB/);
    expect(silent.code).toBe(1);
    expect(silent.stderr).toMatch(/\nError: the API at .* did not answer in time\n$/);
  });

  it('reconnects a stream that trickles bytes without ever ending a line, as one that went silent', async () => {
    const follower = pdSpawn(['events', '-f', 'dc_trickle'], home, env);
    try {
      await eventually(async () => follower.stderr().includes('event stream interrupted; reconnecting'), { timeoutMs: 100_000, what: 'the reconnect notice' });
    } finally {
      expect(await follower.interrupt()).toBe(0);
    }
  });
});
