import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pd, PdResult, pdSpawn, pdTerminal, tempHome } from './support/pd';
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

const HTML_404 = '<!DOCTYPE html>\n<html>\n  <head><title>404 Not Found</title></head>\n  <body><h1>Not Found</h1><p>The requested URL was not found on this server.</p></body>\n</html>\n';
const SOURCE = { id: 'dc_a', name: 'a', name_slug: 'a', component_id: 'sc_1', configured_props: {}, active: true };
const WORKFLOW = { id: 'p_a', name: 'a', active: true, deployment_id: 'd_1', trigger: { manual: {} }, steps: [] };
const page = (data: unknown[], end_cursor = 'c1', total_count = data.length): unknown => ({ page_info: { total_count, count: data.length, start_cursor: 'c0', end_cursor }, data });
const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

/**
 * Servers that answer 200 with JSON of the wrong shape, one per base URL (`/<case>/v1`): what each route of
 * the case answers (a function of the request's query for the pages of a list), 404 for the others.
 */
const WRONG_SHAPES: Record<string, Record<string, unknown>> = {
  'bad-id': { '/users/me/sources': page([{ ...SOURCE, id: {} }]) },
  'page-info-string': { '/users/me/sources': { page_info: 'none', data: [SOURCE] } },
  'same-cursor': { '/users/me/sources': () => page([SOURCE], 'again', 1e9) },
  'endless-pages': { '/users/me/sources': (q: URLSearchParams) => page([{ ...SOURCE, id: `dc_${q.get('after') ?? 0}` }], String(Number(q.get('after') ?? 0) + 1), 1e9) },
  'huge-page': { '/users/me/sources': page(Array.from({ length: 5000 }, (_, i) => ({ ...SOURCE, id: `dc_${i}` }))) },
  'null-name': { '/users/me/sources': page([{ ...SOURCE, name: null }]) },
  'timer-null': { '/users/me/workflows': page([{ ...WORKFLOW, trigger: { timer: null } }]) },
  'null-events': { '/sources/dc_a': { data: SOURCE }, '/sources/dc_a/event_summaries': { data: null } },
  'deep-event': { '/sources/dc_a': { data: SOURCE }, '/sources/dc_a/event_summaries': `{"data":[{"id":"1-0","indexed_at_ms":1,"metadata":{"name":""},"event":${nested(100_000)}}]}` },
  'deep-control': { '/sources/dc_a': { data: SOURCE }, '/sources/dc_a/event_summaries': `{"data":[],"\\u001b]0;owned\\u0007":${nested(2000)}}` },
  'id-number': { '/sources/dc_a': { data: SOURCE }, '/sources/dc_a/event_summaries': page([{ id: 5, indexed_at_ms: 1, metadata: { name: '$logs' }, event: {} }]) },
  'far-ts': { '/sources/dc_a': { data: SOURCE }, '/sources/dc_a/event_summaries': (q: URLSearchParams) => page(q.get('event_name') === '$logs' ? [{ id: '1-0', indexed_at_ms: 1763930000000, metadata: { name: '$logs' }, event: { ts: 1e20, k: 'console.log', msg: 'hi' } }] : []) },
  'null-prop': { '/components/registry/hello': { data: { id: 'sc_1', name: 'hello', version: '0.0.1', type: 'source', configurable_props: [null] } } },
  'null-component': { '/components': { data: null } },
  'props-number': { '/components': { data: { id: 'sc_1', name: 'hello', version: '0.0.1', type: 'source', configurable_props: 5 } } },
  'name-number': { '/sources/dc_a': { data: SOURCE }, 'PUT /sources/dc_a': { data: { ...SOURCE, name: 5 } } },
  'run-empty': { '/sources/dc_a': { data: SOURCE }, '/sources/dc_a/run': { data: {} } },
  'replay-five': { '/workflows/p_a': { data: WORKFLOW }, '/workflows/p_a/replay': { data: 5 } },
  // Ids that would climb out of their route if pd put them into a path as they are.
  'slash-id': { '/sources/dc_a': { data: { ...SOURCE, id: 'dc_a/../../users/me' } }, '/workflows/p_a': { data: { ...WORKFLOW, id: 'p_a/../../users/me' } } },
  'steps-null': { '/workflows/p_a': { data: WORKFLOW }, '/workflows/p_a/runs': { data: [{ id: 'inv_1', status: 'success', started_at: '2026-01-01T00:00:00.000Z', duration_ms: 1, deployment_id: 'd_1', failed_step: null, steps: null }] } },
};

/**
 * What a terminal acts on in what a server names: a colour pd itself uses (SGR 31), a window title (OSC 0),
 * a screen clear, a carriage return, a backspace; and how pd shows it.
 */
const TTY = '\u001b[31mred\u001b]0;title\u0007\u001b[2J\rcr\bbs';
const TTY_SHOWN = '\\x1b[31mred\\x1b]0;title\\x07\\x1b[2J\\rcr\\x08bs';
const TTY_SOURCE = { id: `dc_${TTY}`, name: `n${TTY}`, name_slug: 'a', component_id: `sc_${TTY}`, configured_props: {}, active: true };
const TTY_WORKFLOW = { ...WORKFLOW, id: `p_${TTY}`, name: `w${TTY}`, deployment_id: `d_${TTY}` };
const TTY_COMPONENT = { id: `sc_${TTY}`, name: `c${TTY}`, version: '0.0.1', configurable_props: [] };

/** The server at `/tty/v1`: every id, name and error it answers carries TTY; routes of its own ids are `/sources/dc_%1B…`. */
function ttyAnswer(req: IncomingMessage, res: ServerResponse, rest: string): void {
  let body = '';
  req.on('data', (d: Buffer) => (body += d.toString()));
  req.on('end', () => {
    const send = (status: number, answer?: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(answer === undefined ? undefined : JSON.stringify(answer));
    };
    const route = `${req.method} ${rest.replace(/^\/(sources|workflows)\/(dc|p)_%1B[^/]*/, '/$1/<hostile>')}`;
    const answers: Record<string, () => void> = {
      'GET /sources/dc_a': () => send(200, { data: TTY_SOURCE }),
      'GET /sources/dc_err': () => send(422, { error: `refused ${TTY}`, code: 'refused' }),
      'GET /users/me/sources': () => send(200, page([TTY_SOURCE])),
      'GET /users/me/workflows': () => send(200, page([])),
      'GET /workflows/p_a': () => send(200, { data: TTY_WORKFLOW }),
      'GET /sources/<hostile>/event_summaries': () => send(200, page([])),
      // pd dev sends new code (component_code): refused; pd update --active answers the source.
      'PUT /sources/<hostile>': () => (body.includes('component_code') ? send(400, { error: `bad code ${TTY}`, code: 'bad_code' }) : send(200, { data: TTY_SOURCE })),
      'DELETE /sources/<hostile>': () => send(204),
      'DELETE /workflows/<hostile>': () => send(204),
      'POST /sources/<hostile>/run': () => send(202, { data: { invocation_id: `inv_${TTY}` } }),
      'POST /workflows/<hostile>/replay': () => send(200, { data: { invocation_id: `inv_${TTY}` } }),
      'GET /workflows/<hostile>/runs': () => send(200, { data: [] }),
      'POST /components': () => send(200, { data: TTY_COMPONENT }),
      'POST /sources': () => send(200, { data: TTY_SOURCE }),
      'POST /workflows': () => send(200, { data: TTY_WORKFLOW }),
    };
    (answers[route] ?? (() => send(404, { error: 'not found', code: 'not_found' })))();
  });
}

/** Every request the server got (method and path). */
const requests: string[] = [];

/**
 * A server at api_base_url that is not this service, or is hostile: an endless answer, an endless error,
 * event streams whose one message never ends, that never answer, or that trickle bytes without a line.
 */
function hostileApi(): Server {
  return createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const [, name, rest] = /^\/([a-z-]+)\/v1(\/.*)$/.exec(url.pathname) ?? [];
    if (name === 'tty') return ttyAnswer(req, res, rest);
    const shaped = WRONG_SHAPES[name];
    requests.push(`${req.method} ${url.pathname}`);
    if (shaped) {
      const answer = shaped[`${req.method} ${rest}`] ?? shaped[rest];
      if (answer === undefined) return res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not found', code: 'not_found' }));
      const body = typeof answer === 'function' ? (answer as (q: URLSearchParams) => unknown)(url.searchParams) : answer;
      return res.writeHead(200, { 'content-type': 'application/json' }).end(typeof body === 'string' ? body : JSON.stringify(body));
    }
    if (url.pathname === '/sse/dc/dc_badmeta/emits') {
      // Sent again on every connection: a follower that takes it for a dropped connection reconnects for ever.
      return res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`id: 1-0\ndata: ${JSON.stringify({ id: '1-0', indexed_at_ms: 1, metadata: { name: {} }, event: {} })}\n\n`);
    }
    const path = url.pathname;
    const source = /^\/v1\/sources\/(dc_[a-z]+)$/.exec(path)?.[1];
    if (path === '/v1/users/me') return res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    if (path === '/v1/users/me/sources') return endless(res, 200, 'application/json', '{"data":"');
    if (path === '/v1/orgs/o_broken/sources') return endless(res, 500, 'application/json', '{"error":"');
    // Another web server at api_base_url (a mistyped port): its own error page.
    if (path.startsWith('/html/v1/')) return res.writeHead(404, { 'content-type': 'text/html' }).end(HTML_404);
    if (source) return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: { id: source, name: source, name_slug: source, component_id: 'sc_1', configured_props: {}, active: true } }));
    if (path.endsWith('/event_summaries')) return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ page_info: { total_count: 0, count: 0, start_cursor: null, end_cursor: null }, data: [] }));
    if (/^\/tty\/sse\/(dc|p)\/(dc|p)_%1B/.test(path)) return res.writeHead(200, { 'content-type': 'text/event-stream' }).write(':hello\n\n'); // held open
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
  let origin: string;
  let work: string;
  /** Runs pd against the server of one case of WRONG_SHAPES; its base URL. */
  const against = async (name: string, args: string[]): Promise<PdResult & { base: string }> => {
    const base = `${origin}/${name}/v1`;
    return { ...(await pd(args, home, { ...env, PD_API_BASE_URL: base }, work)), base };
  };
  /** pd ends with exit code 1 and one line saying what was wrong with which answer, and prints nothing on stdout. */
  const refused = async (name: string, args: string[], what: (base: string) => string): Promise<void> => {
    const r = await against(name, args);
    expect([r.code, r.stdout, r.stderr]).toEqual([1, '', `Error: unexpected answer from ${what(r.base)}\n`]);
  };

  beforeAll(async () => {
    server = hostileApi();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    home = tempHome();
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    env = { PD_API_BASE_URL: `${origin}/v1`, PD_API_KEY: 'pd_any' };
    work = mkdtempSync(join(tmpdir(), 'pd-shapes-'));
    writeFileSync(join(work, 'action.mjs'), 'export default { key: "act", name: "Act", version: "0.0.1", type: "action", async run() { return 1; } };\n');
    writeFileSync(join(work, 'source.mjs'), 'export default { key: "src", name: "Src", version: "0.0.1", async run() {} };\n');
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
    rmSync(home, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
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
    expect(error.stderr).toMatch(new RegExp(`^Error: GET ${env.PD_API_BASE_URL}/orgs/o_broken/sources\\?limit=100 answered HTTP 500 with a body that is not an error of this API \\("\\{"error":"a+…"\\): is api_base_url ${env.PD_API_BASE_URL} right\\?\n$`));
  });

  it('names the request and points to api_base_url when an error answer is not one of this API (another web server)', async () => {
    const base = `${origin}/html/v1`;
    const page = '"<!DOCTYPE html> <html> <head><title>404 Not Found</title></head> <body><h1>Not Found</h1><p>The requ…"';
    const login = await pd(['login', '--api-key', 'pd_any', '--api-base-url', base], home);
    expect([login.code, login.stdout, login.stderr]).toEqual([1, '', `Error: GET ${base}/users/me answered HTTP 404 with a body that is not an error of this API (${page}): is api_base_url ${base} right?\n`]);
    const list = await pd(['list', 'sources'], home, { ...env, PD_API_BASE_URL: base });
    expect([list.code, list.stdout, list.stderr]).toEqual([1, '', `Error: GET ${base}/users/me/sources?limit=100 answered HTTP 404 with a body that is not an error of this API (${page}): is api_base_url ${base} right?\n`]);
    const follow = await pd(['events', '-f', 'dc_x'], home, { ...env, PD_API_BASE_URL: base });
    expect([follow.code, follow.stdout, follow.stderr]).toEqual([1, '', `Error: GET ${base}/sources/dc_x answered HTTP 404 with a body that is not an error of this API (${page}): is api_base_url ${base} right?\n`]);
  });

  it('saves no profile for a server that answers JSON but no user', async () => {
    const login = await pd(['login', '--api-key', 'pd_any', '--api-base-url', env.PD_API_BASE_URL], home);
    expect([login.code, login.stdout, login.stderr]).toEqual([1, '', `Error: GET ${env.PD_API_BASE_URL}/users/me did not answer a user (data is not a JSON object): is api_base_url ${env.PD_API_BASE_URL} right? (nothing was saved)\n`]);
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

  describe('on a terminal with colours, names what the server named with its controls escaped', () => {
    /** pd's own escape sequences on a terminal: its colours, and a spinner's return to the start of its line. */
    const OWN_SEQUENCES = /\u001b\[(?:0|1|2|31|32|33|36)m|\r\u001b\[2K/g;
    /** What a terminal acts on instead of showing: C0 controls but tab and line feed, DEL, C1 controls, bidi overrides. */
    const TERMINAL_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
    const ttyEnv = (): Record<string, string> => ({ ...env, PD_API_BASE_URL: `${origin}/tty/v1` });
    /** The output holds pd's own colours, each text the server named as `shown`, and no other escape sequence. */
    const expectEscaped = (output: string, shown: string[]): void => {
      expect(output).toMatch(new RegExp(OWN_SEQUENCES.source));
      for (const text of shown) expect(output).toContain(text);
      expect(output).not.toContain('\u001b[31mred');
      expect(output.replace(OWN_SEQUENCES, '')).not.toMatch(TERMINAL_CONTROL);
    };

    it.each<[string[], number, string[]]>([
      [['events', 'dc_a'], 0, [`No events yet for dc_${TTY_SHOWN}`]],
      [['logs', '--no-follow', 'dc_a'], 0, [`No logs yet for dc_${TTY_SHOWN}`]],
      [['update', 'dc_a', '--active', 'false'], 0, [`Updated source\u001b[0m dc_${TTY_SHOWN}\n`, `name:         n${TTY_SHOWN}\n`]],
      [['delete', 'dc_a'], 0, [`Deleted source dc_${TTY_SHOWN} (n${TTY_SHOWN})`]],
      [['delete', 'p_a'], 0, [`Deleted workflow p_${TTY_SHOWN} (w${TTY_SHOWN})`]],
      [['run', 'dc_a'], 0, [`Invoked dc_${TTY_SHOWN} (n${TTY_SHOWN}) \u001b[2minvocation_id=inv_${TTY_SHOWN}`]],
      [['replay', 'p_a', '1-0'], 0, [`Replayed 1-0 into p_${TTY_SHOWN} (w${TTY_SHOWN})`]],
      [['runs', 'p_a'], 0, [`No runs yet for p_${TTY_SHOWN}`]],
      [['publish', 'action.mjs'], 0, [`Published action\u001b[0m sc_${TTY_SHOWN}\n`]],
      [['deploy', 'source.mjs'], 0, [`Deployed source\u001b[0m dc_${TTY_SHOWN}\n`, `component:    sc_${TTY_SHOWN} (c${TTY_SHOWN} v0.0.1)`]],
      [['events', 'dc_err'], 1, [`Error:\u001b[0m refused ${TTY_SHOWN} (HTTP 422)\n`]],
    ])('pd %j', async (args, code, shown) => {
      const t = pdTerminal(args, home, ttyEnv(), work);
      expect(await t.exited).toBe(code);
      expectEscaped(t.output(), shown);
    });

    /** pd dev of a file: what it deployed, an update the server refuses after `changed` is saved, the stop with Ctrl-C. */
    it.each<[string, string, string, string[]]>([
      ['dev-source.mjs', 'dev-source.mjs', 'export default { key: "dev", name: "Dev", version: "0.0.2", async run() {} };\n', [`Deployed source\u001b[0m dc_${TTY_SHOWN}\n`, `update failed: bad code ${TTY_SHOWN} (HTTP 400)`, `Stopped. dc_${TTY_SHOWN} stays deployed`]],
      ['dev-flow.yaml', 'dev-step.mjs', 'export default defineComponent({ async run() { return 2; } });\n', [`streaming events and logs of p_${TTY_SHOWN}`, `deploy failed: the name changed from "w${TTY_SHOWN}" to "dev-flow"`, `Stopped. p_${TTY_SHOWN} stays deployed`]],
    ])('pd dev %s', async (file, changed, code, shown) => {
      writeFileSync(join(work, 'dev-source.mjs'), 'export default { key: "dev", name: "Dev", version: "0.0.1", async run() {} };\n');
      writeFileSync(join(work, 'dev-step.mjs'), 'export default defineComponent({ async run() { return 1; } });\n');
      writeFileSync(join(work, 'dev-flow.yaml'), ['name: dev-flow', 'trigger:', '  manual: {}', 'steps:', '  - name: first', '    code: ./dev-step.mjs', ''].join('\n'));
      const dev = pdTerminal(['dev', file], home, ttyEnv(), work);
      await eventually(async () => dev.output().includes('Watching'), { timeoutMs: 60_000, what: `pd dev ${file} watching` });
      writeFileSync(join(work, changed), code);
      await eventually(async () => dev.output().includes('failed:'), { timeoutMs: 60_000, what: `pd dev ${file} redeploying` });
      dev.type('\u0003');
      expect(await dev.exited).toBe(0);
      expectEscaped(dev.output(), shown);
    });
  });

  describe('answers 200 with JSON of the wrong shape', () => {
    it('lists: a field of the wrong type, page_info not an object, more items than asked for', async () => {
      await refused('bad-id', ['list', 'sources'], (b) => `GET ${b}/users/me/sources?limit=100: data[0].id is not a string`);
      await refused('page-info-string', ['list', 'sources', '--json'], (b) => `GET ${b}/users/me/sources?limit=100: page_info is not a JSON object`);
      await refused('huge-page', ['list', 'streams'], (b) => `GET ${b}/users/me/sources?limit=100: data has 5000 items, more than the 100 asked for`);
      await refused('timer-null', ['list', 'workflows'], (b) => `GET ${b}/users/me/workflows?limit=100: data[0].trigger.timer is not a JSON object`);
      await refused('null-name', ['delete', 'b'], (b) => `GET ${b}/users/me/sources?limit=100: data[0].name is not a string`);
    });

    it('stops a pagination whose cursor comes back, or whose pages never end', async () => {
      await refused('same-cursor', ['list', 'sources'], (b) => `GET ${b}/users/me/sources?limit=100&after=again: page_info.end_cursor repeats an earlier page's: the list would never end`);
      await refused('endless-pages', ['list', 'sources'], (b) => `GET ${b}/users/me/sources?limit=100&after=999: page_info says more items follow after 1000 pages (1000 items): the list would never end`);
    });

    it('events and logs: no list where one is expected, an event nested without end, ids that are not strings', async () => {
      const summaries = (b: string, query: string): string => `GET ${b}/sources/dc_a/event_summaries?limit=10&expand=event%2Csummary${query}`;
      await refused('null-events', ['events', 'dc_a'], (b) => `${summaries(b, '')}: data is not an array`);
      await refused('deep-event', ['events', 'dc_a'], (b) => `${summaries(b, '')}: data[0].event is nested deeper than 1000 levels`);
      // What the server named is shown with its control characters escaped.
      await refused('deep-control', ['events', '--json', 'dc_a'], (b) => `${summaries(b, '')}: \\x1b]0;owned\\x07[0][0] is nested deeper than 1000 levels`);
      const logs = await against('id-number', ['logs', '--no-follow', 'dc_a']);
      expect([logs.code, logs.stdout]).toEqual([1, '']);
      expect(logs.stderr).toMatch(/^Error: unexpected answer from GET \S+\/sources\/dc_a\/event_summaries\?limit=20&expand=event%2Csummary&event_name=%24(logs|errors): data\[0\]\.id is not a string\n$/);
      // A log line's time is whatever its source wrote: one that is no date is shown at the time the event was indexed.
      const far = await against('far-ts', ['logs', '--no-follow', 'dc_a']);
      expect([far.code, far.stdout, far.stderr]).toEqual([0, '2025-11-23T20:33:20.000Z log   hi\n', '']);
    });

    it('ends a followed stream on a message that is no event summary, instead of reconnecting for ever', async () => {
      const follow = await pd(['events', '-f', 'dc_badmeta'], home, env);
      expect(follow.code).toBe(1);
      expect(follow.stderr).toMatch(/\nError: unexpected answer from the event stream \/sse\/dc\/dc_badmeta\/emits\?expand=summary: metadata\.name is not a string\n$/);
      expect(follow.stderr).not.toMatch(/reconnecting/);
    }, 30_000);

    it('puts the ids a server names into a path encoded, so that they cannot lead to another route', async () => {
      for (const args of [['update', 'dc_a', '--active', 'false'], ['delete', 'p_a'], ['replay', 'p_a', '1-0'], ['runs', 'p_a']]) await against('slash-id', args);
      // Past the look-ups of dc_a and p_a, which answer those ids:
      const sent = requests.filter((r) => r.includes('/slash-id/') && r !== 'GET /slash-id/v1/sources/dc_a' && r !== 'GET /slash-id/v1/workflows/p_a');
      expect(sent).toEqual([
        'PUT /slash-id/v1/sources/dc_a%2F..%2F..%2Fusers%2Fme',
        'DELETE /slash-id/v1/workflows/p_a%2F..%2F..%2Fusers%2Fme',
        'POST /slash-id/v1/workflows/p_a%2F..%2F..%2Fusers%2Fme/replay',
        'GET /slash-id/v1/workflows/p_a%2F..%2F..%2Fusers%2Fme/runs',
      ]);
    });

    it('deploy, dev, publish, update, run, replay and runs', async () => {
      await refused('null-prop', ['deploy', 'hello'], (b) => `GET ${b}/components/registry/hello: data.configurable_props[0] is not a JSON object`);
      await refused('props-number', ['dev', 'source.mjs'], (b) => `POST ${b}/components: data.configurable_props is not an array`);
      await refused('null-component', ['publish', 'action.mjs'], (b) => `POST ${b}/components: data is not a JSON object`);
      await refused('name-number', ['update', 'dc_a', '--active', 'false'], (b) => `PUT ${b}/sources/dc_a: data.name is not a string`);
      await refused('run-empty', ['run', 'dc_a'], (b) => `POST ${b}/sources/dc_a/run: data.invocation_id is not a string`);
      await refused('replay-five', ['replay', 'p_a', '1-0'], (b) => `POST ${b}/workflows/p_a/replay: data is not a JSON object`);
      await refused('steps-null', ['runs', 'p_a'], (b) => `GET ${b}/workflows/p_a/runs?limit=5: data[0].steps is not an array`);
    });
  });
});
