import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admin, client, createUser, TestUser } from './support/accounts';
import { pd, PD_BIN, pdAt, pdEnv, pdSpawn, tempHome } from './support/pd';
import { eventually, freePort, startSystem, System } from './support/system';
import { sql } from './events.helpers';

/** A multi-file HTTP source: the entry imports a relative module and an npm package stays external. */
const SOURCE_ENTRY = `import { shout } from "./lib/shout.mjs";
export default {
  name: "CLI Test Source",
  key: "cli-test-source",
  version: "0.0.1",
  props: { http: "$.interface.http", greeting: { type: "string", label: "Greeting" } },
  async run(event) {
    console.log("handled " + (event && event.method ? event.method : "run"));
    this.$emit({ message: shout(this.greeting), body: (event && event.body) || null }, { summary: "greeting" });
  },
};
`;
const shoutModule = (suffix: string): string => `export const shout = (s) => String(s).toUpperCase() + "${suffix}";\n`;

const ACTION = `export default {
  name: "CLI Test Action",
  key: "cli-test-action",
  version: "0.0.1",
  type: "action",
  props: { text: { type: "string" } },
  async run({ $ }) { return this.text; },
};
`;

/**
 * Pipedream's layout: the entry imports its app two folders up and a shared
 * module, composes them with spreads, and imports an npm package.
 */
const DEEP_APP = (greeting: string): string => `import { axios } from "@pipedream/platform";
export default {
  type: "app",
  app: "deep",
  propDefinitions: { label: { type: "string", label: "Label" } },
  methods: { greet(s) { return "${greeting} " + s + (typeof axios === "function" ? " (platform)" : ""); } },
};
`;
const DEEP_COMMON = `import deep from "../../deep.app.mjs";
export default {
  props: { deep, http: "$.interface.http", label: { propDefinition: [deep, "label"] } },
};
`;
const DEEP_SOURCE = `import common from "../common/base.mjs";
export default {
  ...common,
  key: "deep-new-thing",
  name: "Deep New Thing",
  version: "0.0.1",
  props: { ...common.props },
  async run() { this.$emit({ text: this.deep.greet(this.label) }, { summary: "deep" }); },
};
`;

interface Summary {
  id: string;
  event: { message?: string; body?: unknown };
  metadata: { name: string; emitter_id: string };
}

describe('pd command-line tool', () => {
  let system: System;
  let user: TestUser;
  let home: string;
  let dir: string;
  let sourceId = '';
  let endpoint = '';

  const json = <T>(text: string): T => JSON.parse(text) as T;
  const post = (url: string, body: unknown): Promise<Response> => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  beforeAll(async () => {
    system = await startSystem();
    user = createUser(system);
    home = tempHome();
    dir = mkdtempSync(join(tmpdir(), 'pd-src-'));
    mkdirSync(join(dir, 'lib'));
    writeFileSync(join(dir, 'source.mjs'), SOURCE_ENTRY);
    writeFileSync(join(dir, 'lib', 'shout.mjs'), shoutModule('!'));
    writeFileSync(join(dir, 'action.mjs'), ACTION);
  });
  afterAll(async () => {
    await system?.stop();
    for (const d of [home, dir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('prints help and version, and rejects unknown commands with a usage error', async () => {
    const help = await pd(['--help'], home);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Usage: pd <command>/);
    for (const cmd of ['deploy', 'dev', 'publish', 'logs', 'events', 'list']) expect(help.stdout).toContain(cmd);
    const deployHelp = await pd(['deploy', '--help'], home);
    expect(deployHelp.stdout).toContain('--prop <name=value>');
    const version = await pd(['--version'], home);
    expect(version.stdout.trim()).toBe(json<{ version: string }>(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')).version);
    const unknown = await pd(['frobnicate'], home);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command "frobnicate"/);
    const unknownList = await pd(['list', 'bogus'], home);
    expect([unknownList.code, unknownList.stderr.trim()]).toEqual([2, 'Error: pd list needs what to list: pd list sources, pd list streams or pd list workflows (not "bogus")']);
  });

  it('says how to build it when run from a fresh clone', async () => {
    const clone = mkdtempSync(join(tmpdir(), 'pd-clone-'));
    try {
      mkdirSync(join(clone, 'bin'));
      copyFileSync(PD_BIN, join(clone, 'bin', 'pd.js'));
      const r = await pdAt(join(clone, 'bin', 'pd.js'), ['--help'], home);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(`Error: the pd CLI is not built yet: run \`npm ci && npm run build\` in ${clone} (npm start also does it)\n`);
    } finally {
      rmSync(clone, { recursive: true, force: true });
    }
  });

  it('reports a missing key, a wrong key and an unreachable API in one line with a non-zero exit', async () => {
    const missing = await pd(['list', 'sources'], home, { PD_API_BASE_URL: system.baseUrl });
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr.trim()).toMatch(/^Error: no API key configured .*pd login/);

    const badLogin = await pd(['login', '--api-key', 'pd_wrong', '--api-base-url', system.baseUrl], home);
    expect(badLogin.code).toBe(1);
    expect(badLogin.stderr.trim().split('\n')).toHaveLength(1);
    expect(badLogin.stderr).toMatch(/authentication failed \(invalid API key\)/);

    const notMember = await pd(['login', '--api-key', user.apiKey, '--api-base-url', system.baseUrl, '--org-id', 'o_notmine'], home);
    expect(notMember.code).toBe(1);
    expect(notMember.stderr.trim()).toMatch(/^Error: org o_notmine not found, or .* is not a member of it: check --org-id \(nothing was saved\)$/);
    expect(existsSync(join(home, '.config', 'pipedream', 'config'))).toBe(false);

    const badKey = await pd(['list', 'sources'], home, { PD_API_BASE_URL: system.baseUrl, PD_API_KEY: 'pd_wrong' });
    expect(badKey.code).toBe(1);
    expect(badKey.stdout).toBe('');
    expect(badKey.stderr).toMatch(/authentication failed/);

    const down = `http://127.0.0.1:${await freePort()}/v1`;
    const refused = await pd(['list', 'sources'], home, { PD_API_BASE_URL: down, PD_API_KEY: user.apiKey });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr.trim()).toBe(`Error: cannot reach the API at ${down}: connection refused (is the server running?); check api_base_url (\`pd config\`) or PD_API_BASE_URL`);
  });

  it('logs in, writes the config file and shows it with pd config', async () => {
    const login = await pd(['login', '--api-key', user.apiKey, '--api-base-url', system.baseUrl], home);
    expect(login.stderr).toBe('');
    expect(login.code).toBe(0);
    expect(login.stdout).toMatch(new RegExp(`Logged in as .* \\(${user.id}\\)`));
    const file = readFileSync(join(home, '.config', 'pipedream', 'config'), 'utf8');
    expect(file).toContain(`api_key = ${user.apiKey}`);
    expect(file).toContain(`api_base_url = ${system.baseUrl}`);

    const shown = await pd(['config', '--json'], home);
    expect(json<Record<string, string>>(shown.stdout)).toEqual({
      profile: 'default',
      config_path: join(home, '.config', 'pipedream', 'config'),
      api_base_url: system.baseUrl,
      api_key: expect.stringMatching(/^.{6}….{4}$/),
      org_id: null,
    });
    const set = await pd(['config', 'set', 'org_id', 'o_example', '--profile', 'other'], home);
    expect(set.code).toBe(0);
    expect((await pd(['config', 'get', 'org_id', '--profile', 'other'], home)).stdout.trim()).toBe('o_example');
    expect(readFileSync(join(home, '.config', 'pipedream', 'config'), 'utf8')).toMatch(/\[other\]\norg_id = o_example/);
    // A value that would write other lines of the file, or a base URL the CLI cannot call, is refused and nothing is saved.
    const before = readFileSync(join(home, '.config', 'pipedream', 'config'), 'utf8');
    const injected = await pd(['config', 'set', 'api_key', 'pd_x\n[evil]\napi_base_url = http://evil', '--profile', 'inj'], home);
    expect([injected.code, injected.stderr.trim()]).toEqual([1, 'Error: api_key may not contain line breaks or other control characters: nothing was saved']);
    for (const url of ['ftp://x', 'http://a b', 'not a url']) {
      const bad = await pd(['config', 'set', 'api_base_url', url, '--profile', 'inj'], home);
      expect([url, bad.code, bad.stderr]).toEqual([url, 1, expect.stringContaining('api_base_url must be an http or https URL')]);
    }
    expect((await pd(['config', 'set', 'org_id', 'o_x', '--profile', 'a]\n[b'], home)).code).toBe(1);
    expect(readFileSync(join(home, '.config', 'pipedream', 'config'), 'utf8')).toBe(before);
    // XDG_CONFIG_HOME moves the file.
    const elsewhere = await pd(['config', 'path'], home, { XDG_CONFIG_HOME: '/tmp/xdg-elsewhere' });
    expect(elsewhere.stdout.trim()).toBe('/tmp/xdg-elsewhere/pipedream/config');
  });

  it('refuses to deploy without a required prop when there is no terminal', async () => {
    const r = await pd(['deploy', 'source.mjs'], home, {}, dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/missing required prop: greeting \(string\); pass --prop name=value/);
    const list = await pd(['list', 'sources', '--json'], home);
    expect(json<unknown[]>(list.stdout)).toEqual([]);
  });

  it('deploys a multi-file component with --prop and prints id, endpoint and SSE URL', async () => {
    const r = await pd(['deploy', 'source.mjs', '--prop', 'greeting=hello', '--name', 'cli test', '--json'], home, {}, dir);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = json<{ id: string; name: string; endpoint_url: string; sse_url: string; configured_props: Record<string, unknown>; component: { name: string } }>(r.stdout);
    expect(out.id).toMatch(/^dc_/);
    expect(out.name).toBe('cli test');
    expect(out.component.name).toBe('CLI Test Source');
    expect(out.configured_props.greeting).toBe('hello');
    expect(out.endpoint_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/e\//);
    expect(out.sse_url).toBe(`${system.origin}/sse/dc/${out.id}/emits`);
    sourceId = out.id;
    endpoint = out.endpoint_url;

    const human = await pd(['list', 'sources'], home);
    expect(human.code).toBe(0);
    const lines = human.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+COMPONENT\s+ACTIVE\s+ENDPOINT$/);
    expect(lines.find((l) => l.startsWith(sourceId))).toMatch(new RegExp(`${sourceId}\\s+cli test\\s+sc_\\S+\\s+true\\s+${endpoint.replace(/[./]/g, '\\$&')}`));
  });

  it('deploys from a registry key and from a URL; an unknown key is a clear error', async () => {
    const reg = await pd(['deploy', 'http-request-counter', '--json'], home);
    expect(reg.stderr).toBe('');
    const counter = json<{ id: string; name: string; endpoint_url: string; component: { name: string } }>(reg.stdout);
    expect(counter.component.name).toBe('Request Counter');
    expect(counter.endpoint_url).toMatch(/\/e\//);

    const files = createServer((req, res) => {
      const file = req.url === '/lib/shout.mjs' ? join(dir, 'lib', 'shout.mjs') : req.url === '/source.mjs' ? join(dir, 'source.mjs') : undefined;
      res.writeHead(file ? 200 : 404, { 'content-type': 'text/javascript' }).end(file ? readFileSync(file) : 'not found');
    });
    await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(files.address() as AddressInfo).port}/source.mjs`;
      const fromUrl = await pd(['deploy', url, '--prop', 'greeting=from url', '--name', 'from url'], home);
      expect(fromUrl.stderr).toBe('');
      expect(fromUrl.stdout).toMatch(/Deployed source dc_\S+\nid:\s+dc_/);
      expect(fromUrl.stdout).toMatch(/name:\s+from url/);
      expect(fromUrl.stdout).toMatch(/endpoint:\s+http:\/\/127\.0\.0\.1:\d+\/e\//);
      expect(fromUrl.stdout).toMatch(/events \(SSE\):\s+http:\/\/127\.0\.0\.1:\d+\/sse\/dc\/dc_\S+\/emits/);
    } finally {
      files.close();
    }
    const unknown = await pd(['deploy', 'no-such-registry-key'], home);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe('Error: "no-such-registry-key" is neither a local file, a URL nor a registry component key');
    for (const id of [counter.id]) expect((await pd(['delete', id], home)).code).toBe(0);
    expect((await pd(['delete', 'from-url'], home)).code).toBe(0);
  });

  it('deploys a component of the account by its key or sc_ id, as POST /sources with `key` names one (the spec\'s "pd deploy <source key>")', async () => {
    const code = SOURCE_ENTRY.replace('import { shout } from "./lib/shout.mjs";', 'const shout = (s) => s;').replace('key: "cli-test-source"', 'key: "cli-saved-source"');
    const saved = await client(system, user.apiKey).post('/components', { component_code: code });
    expect(saved.status).toBe(200);
    const byKey = await pd(['deploy', 'cli-saved-source', '--prop', 'greeting=by key', '--json'], home);
    expect(byKey.stderr).toBe('');
    const deployed = json<{ id: string; component_id: string }>(byKey.stdout);
    expect(deployed.component_id).toBe(saved.body.data.id);
    const byId = await pd(['deploy', saved.body.data.id, '--prop', 'greeting=by id', '--json'], home);
    expect(byId.stderr).toBe('');
    expect(json<{ component_id: string }>(byId.stdout).component_id).toBe(saved.body.data.id);
    for (const id of [deployed.id, json<{ id: string }>(byId.stdout).id]) expect((await pd(['delete', id], home)).code).toBe(0);
  });

  it('shows the event a request to the endpoint produced (pd events -n 1), by name and by id', async () => {
    expect((await post(endpoint, { n: 1 })).status).toBe(200);
    const events = await eventually(async () => {
      const r = await pd(['events', '-n', '1', 'cli-test', '--json'], home);
      const list = r.code === 0 ? json<Summary[]>(r.stdout) : [];
      return list.length === 1 ? list : undefined;
    }, { what: 'the event', timeoutMs: 60_000, intervalMs: 500 });
    expect(events[0].event).toEqual({ message: 'HELLO!', body: { n: 1 } });
    expect(events[0].metadata.emitter_id).toBe(sourceId);
    const human = await pd(['events', '-n', '1', sourceId], home);
    expect(human.stdout).toContain('"message": "HELLO!"');
    expect(human.stdout).toContain(events[0].id);
  });

  it('writes all of a long output to a pipe before it exits, however slowly the pipe is read (pd events --json | jq)', async () => {
    const big = 'x'.repeat(40_000);
    for (let n = 0; n < 3; n++) expect((await post(endpoint, { n, big })).status).toBe(200);
    await eventually(async () => /"n":\s*2\b/.test((await pd(['events', '-n', '1', sourceId, '--json'], home)).stdout), { what: 'the last large event', timeoutMs: 60_000, intervalMs: 500 });
    // Through a shell pipe (64 KiB) whose reader starts a second late, as `jq` may: the pipe fills before pd is done writing.
    const shell = spawn('sh', ['-c', `"${process.execPath}" "${PD_BIN}" events -n 3 ${sourceId} --json | (sleep 1; cat)`], { env: pdEnv(home), stdio: ['ignore', 'pipe', 'inherit'] });
    const chunks: Buffer[] = [];
    shell.stdout.on('data', (d: Buffer) => chunks.push(d));
    expect(await new Promise<number | null>((resolve) => shell.on('close', resolve))).toBe(0);
    const list = json<Summary[]>(Buffer.concat(chunks).toString());
    expect(list.map((e) => (e.event as { body: { n: number; big: string } }).body)).toEqual([0, 1, 2].map((n) => ({ n, big })));
  });

  it('shows logs and runs the source manually (with and without an event)', async () => {
    const logs = await eventually(async () => {
      const r = await pd(['logs', '--no-follow', sourceId], home);
      return r.stdout.includes('handled POST') ? r : undefined;
    }, { what: 'the log line', timeoutMs: 30_000, intervalMs: 500 });
    expect(logs.code).toBe(0);
    expect(logs.stdout).toMatch(/log\s+handled POST/);
    const logsJson = json<Summary[]>((await pd(['logs', '--no-follow', sourceId, '--json'], home)).stdout);
    expect(logsJson.at(-1)?.metadata.name).toBe('$logs');

    const run = await pd(['run', 'cli test'], home);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`Invoked ${sourceId} \\(cli test\\) invocation_id=\\S+`));
    await eventually(async () => json<Summary[]>((await pd(['events', '-n', '1', sourceId, '--json'], home)).stdout)[0]?.event.body === null, { what: 'the run event', timeoutMs: 60_000, intervalMs: 500 });
    const withEvent = await pd(['run', sourceId, '--event', '{"body":{"manual":1}}', '--json'], home);
    expect(json<{ invocation_id: string }>(withEvent.stdout).invocation_id).toEqual(expect.any(String));
    await eventually(async () => {
      const e = json<Summary[]>((await pd(['events', '-n', '1', sourceId, '--json'], home)).stdout)[0];
      return JSON.stringify(e?.event.body) === '{"manual":1}';
    }, { what: 'the run event with a body', timeoutMs: 60_000, intervalMs: 500 });
  });

  it('follows new events with -f until Ctrl-C', async () => {
    const follower = pdSpawn(['events', '-f', '-n', '1', 'cli test', '--json'], home);
    try {
      await eventually(async () => follower.stdout().includes(sourceId), { what: 'the follower to print history' });
      expect((await post(endpoint, { followed: true })).status).toBe(200);
      await eventually(async () => follower.stdout().includes('"followed":true'), { what: 'the event on the follow stream', timeoutMs: 60_000 });
      // The API restarts: the follower reconnects with Last-Event-ID and misses nothing.
      await system.stopApp('api');
      await eventually(async () => follower.stderr().includes('event stream interrupted'), { what: 'the follower to notice' });
      await system.startApp('api', 'api');
      await eventually(async () => (await post(endpoint, { afterRestart: true })).status === 200, { what: 'the endpoint after the restart' });
      await eventually(async () => follower.stdout().includes('"afterRestart":true'), { what: 'the event after the restart', timeoutMs: 60_000 });
    } finally {
      expect(await follower.interrupt()).toBe(0);
    }
    const lines = follower.stdout().trim().split('\n').map((l) => json<Summary>(l));
    expect(lines.map((l) => l.event.body)).toEqual(expect.arrayContaining([{ followed: true }, { afterRestart: true }]));
    expect(lines.at(-1)?.event).toEqual({ message: 'HELLO!', body: { afterRestart: true } });
    expect(new Set(lines.map((l) => l.id)).size).toBe(lines.length);
  });

  it('ends quietly with exit code 0 when the reader of its output goes away (pd events -f | head)', async () => {
    const follower = pdSpawn(['events', '-f', '-n', '1', sourceId], home);
    try {
      await eventually(async () => follower.stdout().includes('"message": "HELLO!"'), { what: 'the follower to print history' });
      const exited = new Promise<number | null>((resolve) => follower.child.on('exit', (code) => resolve(code)));
      follower.child.stdout?.destroy();
      // Each new event makes pd write to the closed pipe.
      await eventually(async () => {
        if (follower.child.exitCode !== null) return true;
        await post(endpoint, { afterHead: true });
        return false;
      }, { what: 'pd to notice the closed pipe', timeoutMs: 60_000, intervalMs: 1000 });
      expect(await exited).toBe(0);
      expect(follower.stderr()).toBe('');
    } finally {
      await follower.interrupt();
    }
  });

  it('updates props and the active state, keeping the id', async () => {
    const r = await pd(['update', 'cli-test', '--prop', 'greeting=bye', '--json'], home);
    expect(r.stderr).toBe('');
    const updated = json<{ id: string; configured_props: Record<string, unknown>; endpoint_url: string; active: boolean }>(r.stdout);
    expect(updated).toMatchObject({ id: sourceId, endpoint_url: endpoint, active: true });
    expect(updated.configured_props.greeting).toBe('bye');
    await eventually(async () => {
      await post(endpoint, { n: 2 });
      const list = json<Summary[]>((await pd(['events', '-n', '1', sourceId, '--json'], home)).stdout);
      return list[0]?.event.message === 'BYE!';
    }, { what: 'an event with the new prop', timeoutMs: 60_000, intervalMs: 1000 });
    const off = await pd(['update', sourceId, '--active', 'false', '--json'], home);
    expect(json<{ active: boolean }>(off.stdout).active).toBe(false);
    // A run of an inactive source is refused, with the pd command that enables it (not the REST call).
    const inactive = await pd(['run', 'cli-test'], home);
    expect([inactive.code, inactive.stdout, inactive.stderr]).toEqual([1, '', `Error: source ${sourceId} (cli test) is not active: enable it with \`pd update ${sourceId} --active true\` (HTTP 409)\n`]);
    const bad = await pd(['update', sourceId, '--active', 'maybe'], home);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--active expects true or false/);
  });

  it('publishes an action and refuses to publish a source', async () => {
    const r = await pd(['publish', 'action.mjs', '--json'], home, {}, dir);
    expect(r.stderr).toBe('');
    const c = json<{ id: string; key: string; configurable_props: Array<{ name: string }> }>(r.stdout);
    expect(c.id).toMatch(/^sc_/);
    expect(c.key).toBe('cli-test-action');
    expect(c.configurable_props.map((p) => p.name)).toEqual(['text']);
    const refused = await pd(['publish', 'source.mjs'], home, {}, dir);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/source.mjs is not an action/);
    // A type the code computes: pd deploy refuses it as an action and points here, so pd publish takes it.
    writeFileSync(join(dir, 'computed.mjs'), ACTION.replace('type: "action"', 'type: ["ac", "tion"].join("")').replace('cli-test-action', 'cli-computed-action'));
    const deployed = await pd(['deploy', 'computed.mjs'], home, {}, dir);
    expect([deployed.code, deployed.stderr]).toEqual([1, 'Error: computed.mjs is an action, not a source: save it with `pd publish computed.mjs`\n']);
    const computed = await pd(['publish', 'computed.mjs', '--json'], home, {}, dir);
    expect([computed.code, computed.stderr]).toEqual([0, '']);
    expect(json<{ key: string; type: string }>(computed.stdout)).toMatchObject({ key: 'cli-computed-action', type: 'action' });
  });

  it('refuses to deploy an action (or update a source to one) before saving anything, from a file or a URL', async () => {
    const saved = async (): Promise<number> => (await sql<{ n: number }>(system, 'select count(*)::int as n from components where owner_id = $1', [user.id]))[0].n;
    const before = await saved();
    const fromFile = await pd(['deploy', 'action.mjs'], home, {}, dir);
    expect(fromFile.code).toBe(1);
    expect(fromFile.stderr.trim()).toBe('Error: action.mjs is an action, not a source: save it with `pd publish action.mjs`');
    const files = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/javascript' }).end(ACTION));
    await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(files.address() as AddressInfo).port}/action.mjs`;
      const fromUrl = await pd(['deploy', url], home, {}, dir);
      expect(fromUrl.code).toBe(1);
      // pd publish takes a local file: the URL is not what to give it.
      expect(fromUrl.stderr.trim()).toBe(`Error: ${url} is an action, not a source: only sources are deployed (\`pd publish <file>\` saves an action from a local file)`);
    } finally {
      files.close();
    }
    const fromUpdate = await pd(['update', sourceId, '--file', 'action.mjs'], home, {}, dir);
    expect(fromUpdate.code).toBe(1);
    expect(fromUpdate.stderr.trim()).toBe('Error: action.mjs is an action, not a source: save it with `pd publish action.mjs`');
    // The key of an action already saved (published above): nothing to publish again.
    const fromKey = await pd(['deploy', 'cli-test-action'], home, {}, dir);
    expect([fromKey.code, fromKey.stderr]).toEqual([1, 'Error: cli-test-action is an action, not a source: only sources are deployed (`pd publish <file>` saves an action from a local file)\n']);
    expect(await saved()).toBe(before);
  });

  it('refuses pd dev of a component key or URL before deploying anything: only a local file can be watched', async () => {
    const before = (await pd(['list', 'sources', '--json'], home)).stdout;
    for (const ref of ['http-request-counter', 'https://example.com/source.mjs']) {
      const r = await pd(['dev', ref], home);
      expect([r.code, r.stdout, r.stderr]).toEqual([1, '', `Error: file not found: ${ref} (pd dev watches a local file; a component key or URL is deployed with \`pd deploy ${ref}\`)\n`]);
    }
    expect((await pd(['list', 'sources', '--json'], home)).stdout).toBe(before);
  });

  it('develops a source: redeploys on each save of an imported file and streams its events', async () => {
    const dev = pdSpawn(['dev', 'source.mjs', '--prop', 'greeting=dev', '--name', 'cli dev'], home, {}, dir);
    try {
      // The deploy lines may arrive in more than one chunk: wait for the endpoint line too.
      await eventually(async () => /Deployed source (dc_\S+)/.test(dev.stdout()) && /endpoint:\s+(\S+)/.test(dev.stdout()), { what: 'pd dev to deploy', timeoutMs: 60_000 });
      const devId = /Deployed source (dc_\S+)/.exec(dev.stdout())?.[1] as string;
      const devEndpoint = /endpoint:\s+(\S+)/.exec(dev.stdout())?.[1] as string;
      await eventually(async () => dev.stderr().includes('Watching 2 files'), { what: 'the watcher' });
      writeFileSync(join(dir, 'lib', 'shout.mjs'), shoutModule('?!'));
      await eventually(async () => dev.stderr().includes(`updated ${devId}`), { what: 'the update after a save', timeoutMs: 60_000 });
      await eventually(async () => {
        await post(devEndpoint, { dev: true });
        return dev.stdout().includes('"message": "DEV?!"');
      }, { what: 'the new code to emit on the dev stream', timeoutMs: 60_000, intervalMs: 1000 });
      expect(dev.stdout()).toMatch(/log\s+handled POST/);
      const list = json<Array<{ id: string }>>((await pd(['list', 'sources', '--json'], home)).stdout);
      expect(list.filter((s) => s.id === devId)).toHaveLength(1);
    } finally {
      expect(await dev.interrupt()).toBe(0);
      writeFileSync(join(dir, 'lib', 'shout.mjs'), shoutModule('!'));
    }
    expect(dev.stderr()).toContain('stays deployed');
    // --dc attaches to the existing source instead of deploying another one.
    const devId = /Deployed source (dc_\S+)/.exec(dev.stdout())?.[1] as string;
    const attached = pdSpawn(['dev', 'source.mjs', '--dc', 'cli-dev', '--json'], home, {}, dir);
    try {
      await eventually(async () => attached.stdout().includes(devId), { what: 'pd dev --dc to attach', timeoutMs: 60_000 });
      const first = json<{ id: string; configured_props: Record<string, unknown> }>(attached.stdout().split('\n')[0]);
      expect(first.id).toBe(devId);
      expect(first.configured_props.greeting).toBe('dev');
    } finally {
      expect(await attached.interrupt()).toBe(0);
    }
    expect(json<Array<{ id: string }>>((await pd(['list', 'sources', '--json'], home)).stdout).filter((s) => s.id === devId)).toHaveLength(1);
  });

  it('deploys inside an org and finds org sources by name with the profile\'s org_id', async () => {
    const org = admin(system, ['orgs', 'create', '--name', 'CLI Org', '--orgname', `cli-org-${user.id.slice(2, 12).toLowerCase()}`, '--email', 'cli@org.test']);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', user.id]);
    // A new membership applies on the very next request.
    const r = await pd(['deploy', 'source.mjs', '--org', org.id, '--prop', 'greeting=org', '--name', 'org source', '--json'], home, {}, dir);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const id = json<{ id: string }>(r.stdout).id;
    expect(json<unknown[]>((await pd(['list', 'sources', '--json'], home)).stdout).some((s) => (s as { id: string }).id === id)).toBe(false);
    const inOrg = await pd(['list', 'sources', '--json'], home, { PD_ORG_ID: org.id });
    expect(json<Array<{ id: string }>>(inOrg.stdout).map((s) => s.id)).toEqual([id]);
    expect((await pd(['events', 'org-source'], home)).stderr).toMatch(/no source or workflow named "org-source" in your account/);
    expect((await pd(['events', 'org-source', '--json'], home, { PD_ORG_ID: org.id })).code).toBe(0);
    expect((await pd(['delete', id], home)).code).toBe(0);
  });

  it('bundles a component that imports ../../<app>.app.mjs and ../common with npm imports left external; pd dev follows the app file', async () => {
    const root = join(dir, 'components', 'deep');
    mkdirSync(join(root, 'sources', 'common'), { recursive: true });
    mkdirSync(join(root, 'sources', 'new-thing'), { recursive: true });
    writeFileSync(join(root, 'deep.app.mjs'), DEEP_APP('hello'));
    writeFileSync(join(root, 'sources', 'common', 'base.mjs'), DEEP_COMMON);
    writeFileSync(join(root, 'sources', 'new-thing', 'new-thing.mjs'), DEEP_SOURCE);
    writeFileSync(join(dir, 'deep-props.json'), JSON.stringify({ label: 'world' }));
    const entry = join('components', 'deep', 'sources', 'new-thing', 'new-thing.mjs');
    // The app prop needs no value (the server defaults it to { $auth: {} }), so no terminal is needed.
    const r = await pd(['deploy', entry, '--props', 'deep-props.json', '--json'], home, {}, dir);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const deployed = json<{ id: string; component_id: string; endpoint_url: string; configured_props: Record<string, unknown> }>(r.stdout);
    expect(deployed.configured_props).toMatchObject({ label: 'world', deep: { $auth: '********' } });
    const component = await fetch(`${system.baseUrl}/components/${deployed.component_id}`, { headers: { authorization: `Bearer ${user.apiKey}` } });
    const code = (await component.json() as { data: { code: string } }).data.code;
    expect(code).toContain('from "@pipedream/platform"');
    expect(code).not.toMatch(/from "\.\.?\//);

    const dev = pdSpawn(['dev', entry, '--dc', deployed.id], home, {}, dir);
    try {
      await eventually(async () => dev.stderr().includes('Watching 3 files'), { what: 'pd dev to watch the entry, common and app files', timeoutMs: 60_000 });
      expect(dev.stdout()).toContain(`Attached to source ${deployed.id}`);
      writeFileSync(join(root, 'deep.app.mjs'), DEEP_APP('goodbye'));
      await eventually(async () => dev.stderr().includes(`updated ${deployed.id}`), { what: 'the update after saving the app file', timeoutMs: 60_000 });
      await eventually(async () => {
        await post(deployed.endpoint_url, {});
        return dev.stdout().includes('"text": "goodbye world (platform)"');
      }, { what: 'the new app code to emit', timeoutMs: 60_000, intervalMs: 1000 });
    } finally {
      expect(await dev.interrupt()).toBe(0);
    }
    expect((await pd(['delete', deployed.id], home)).code).toBe(0);
  });

  it('deletes a source; afterwards it is an unknown source', async () => {
    const r = await pd(['delete', 'cli-test'], home);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Deleted source ${sourceId}`);
    const byName = await pd(['events', 'cli-test'], home);
    expect(byName.code).toBe(1);
    expect(byName.stdout).toBe('');
    expect(byName.stderr.trim()).toBe('Error: no source or workflow named "cli-test" in your account (see `pd list sources` and `pd list workflows`)');
    const byId = await pd(['events', sourceId], home);
    expect(byId.code).toBe(1);
    expect(byId.stderr.trim()).toBe(`Error: source "${sourceId}" not found (HTTP 404)`);
  });
});
