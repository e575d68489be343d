import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admin, createUser, TestUser } from './support/accounts';
import { pd, pdSpawn, tempHome } from './support/pd';
import { eventually, startSystem, System } from './support/system';

/**
 * `pd` with workflow files: dev (redeploy on save, streamed emits and logs),
 * list, run, events, logs, runs, replay and delete, through the real apps.
 */
const STEP = (suffix: string): string => `export default defineComponent({
  async run({ steps, $ }) {
    const e = steps.trigger.event;
    console.log("step saw " + JSON.stringify(e));
    if (e.fail) throw new Error("asked to fail");
    $.export("$summary", "ok");
    $.send.emit({ raw_event: { n: e.n, tag: "${suffix}" } });
    return e.n;
  },
});
`;

const WORKFLOW = ['name: cli-flow', 'trigger:', '  manual: {}', 'steps:', '  - name: first', '    code: ./first.mjs', ''].join('\n');

const json = <T>(text: string): T => JSON.parse(text) as T;

describe('pd with workflows', () => {
  let system: System;
  let user: TestUser;
  let home: string;
  let dir: string;

  beforeAll(async () => {
    system = await startSystem();
    user = createUser(system);
    home = tempHome();
    dir = mkdtempSync(join(tmpdir(), 'pd-wf-'));
    writeFileSync(join(dir, 'first.mjs'), STEP('v1'));
    writeFileSync(join(dir, 'workflow.yaml'), WORKFLOW);
    expect((await pd(['login', '--api-key', user.apiKey, '--api-base-url', system.baseUrl], home)).code).toBe(0);
  });
  afterAll(async () => system?.stop());

  it('develops a workflow file: redeploys on save and streams its events and logs', async () => {
    const dev = pdSpawn(['dev', 'workflow.yaml'], home, {}, dir);
    let id = '';
    try {
      await eventually(async () => /id:\s+(p_\w+)/.exec(dev.stderr()), { what: 'the deploy', timeoutMs: 60_000 });
      id = (/id:\s+(p_\w+)/.exec(dev.stderr()) as RegExpExecArray)[1];
      await eventually(async () => dev.stderr().includes('Watching 2 files'), { what: 'the watch' });
      expect((await pd(['run', 'cli-flow', '--event', '{"n":1}'], home)).code).toBe(0);
      await eventually(async () => dev.stdout().includes('"tag": "v1"'), { what: 'the emit on the dev stream' });
      await eventually(async () => dev.stdout().includes('step saw {"n":1}'), { what: 'the log line on the dev stream' });
      writeFileSync(join(dir, 'first.mjs'), STEP('v2'));
      await eventually(async () => dev.stderr().includes(`deployed ${id}`), { what: 'the redeploy on save', timeoutMs: 30_000 });
      expect((await pd(['run', id, '--event', '{"n":2}'], home)).code).toBe(0);
      await eventually(async () => dev.stdout().includes('"tag": "v2"'), { what: 'the new code running' });
    } finally {
      expect(await dev.interrupt()).toBe(0);
    }
    expect(dev.stderr()).toContain(`${id} stays deployed`);
  });

  it('lists, shows events, logs and runs, replays a failed run and deletes', async () => {
    const listed = json<{ id: string; name: string }[]>((await pd(['list', 'workflows', '--json'], home)).stdout);
    const wf = listed.find((w) => w.name === 'cli-flow') as { id: string };
    expect(wf).toBeDefined();
    expect((await pd(['list', 'workflows'], home)).stdout).toMatch(/cli-flow\s+manual\s+1\s+true/);

    expect((await pd(['run', 'cli-flow', '--event', '{"n":3,"fail":true}'], home)).code).toBe(0);
    const errorEvent = await eventually(async () => {
      const logs = json<{ id: string; metadata: { name: string } }[]>((await pd(['logs', '--no-follow', 'cli-flow', '--json'], home)).stdout);
      return logs.find((l) => l.metadata.name === '$errors');
    }, { what: 'the $errors event in pd logs' });
    const text = (await pd(['logs', '--no-follow', 'cli-flow'], home)).stdout;
    // Each console line names its step; an error line ends with the id pd replay takes.
    expect(text).toMatch(/ log {3}\[first\] step saw \{"n":3,"fail":true\}\n/);
    expect(text).toContain(`error Error: asked to fail (event ${errorEvent.id})\n`);
    expect((await pd(['replay', '--help'], home)).stdout).toContain('`pd logs --no-follow <workflow>` ends each');

    const runs = json<{ status: string; failed_step: string | null; steps: { name: string; return_value?: unknown }[] }[]>((await pd(['runs', '-n', '1', 'cli-flow', '--json'], home)).stdout);
    expect(runs[0]).toEqual(expect.objectContaining({ status: 'error', failed_step: 'first' }));
    expect((await pd(['runs', 'cli-flow'], home)).stdout).toMatch(/✖ first/);

    // Fixed, then replayed: the original event runs through the new code.
    writeFileSync(join(dir, 'first.mjs'), STEP('v3').replace('if (e.fail)', 'if (false)'));
    expect((await pd(['deploy', 'workflow.yaml'], home, {}, dir)).stdout).toContain('Deployed workflow');
    const replay = await pd(['replay', 'cli-flow', errorEvent.id], home);
    expect(replay.stdout).toContain(`Replayed ${errorEvent.id}`);
    const events = await eventually(async () => {
      const list = json<{ event: { raw_event: { n: number; tag: string } } }[]>((await pd(['events', '-n', '10', wf.id, '--json'], home)).stdout);
      return list.some((e) => e.event.raw_event.n === 3) ? list : undefined;
    }, { what: 'the replayed run' });
    expect(events.find((e) => e.event.raw_event.n === 3)?.event.raw_event.tag).toBe('v3');

    expect((await pd(['replay', 'cli-flow', '1-0'], home)).stderr).toMatch(/^Error: .*1-0/);
    const del = await pd(['delete', 'cli-flow'], home);
    expect(del.stdout).toContain(`Deleted workflow ${wf.id}`);
    expect((await pd(['runs', 'cli-flow'], home)).stderr).toMatch(/workflow "cli-flow" not found/);
  });

  it('with an org, deploys, runs, lists and deletes the org\'s workflow, never a personal one of the same name', async () => {
    const org = admin(system, ['orgs', 'create', '--name', 'WF Org', '--orgname', `wf-org-${user.id.slice(2, 12).toLowerCase()}`, '--email', 'wf@org.test']);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', user.id]);
    writeFileSync(join(dir, 'shared.yaml'), WORKFLOW.replace('name: cli-flow', 'name: shared-flow'));
    const mine = json<{ id: string }>((await pd(['deploy', 'shared.yaml', '--json'], home, {}, dir)).stdout);
    const created = await pd(['deploy', 'shared.yaml', '--org', org.id], home, {}, dir);
    expect(created.stdout).toContain('Created workflow');
    const inOrg = json<{ id: string; name: string }[]>((await pd(['list', 'workflows', '--json'], home, { PD_ORG_ID: org.id })).stdout);
    expect(inOrg.map((w) => w.name)).toEqual(['shared-flow']);
    const orgId = inOrg[0].id;
    expect(orgId).not.toBe(mine.id);
    // The profile's org_id (PD_ORG_ID) acts like --org: the name is the org's workflow.
    expect((await pd(['deploy', 'shared.yaml', '--json'], home, { PD_ORG_ID: org.id }, dir)).stdout).toContain(`"id": "${orgId}"`);
    expect((await pd(['runs', 'shared-flow'], home, { PD_ORG_ID: org.id })).stdout).toContain(`No runs yet for ${orgId}`);
    expect((await pd(['run', 'shared-flow', '--org', org.id, '--json'], home)).code).toBe(0);
    expect((await pd(['delete', 'shared-flow', '--org', org.id], home)).stdout).toContain(`Deleted workflow ${orgId}`);
    // Gone from the org: the personal workflow of that name is not taken instead.
    const after = await pd(['runs', 'shared-flow', '--org', org.id], home);
    expect([after.code, after.stderr.trim()]).toEqual([1, `Error: workflow "shared-flow" not found: no workflow in org ${org.id} has that id or name (see \`pd list workflows\`)`]);
    expect((await pd(['delete', 'shared-flow', '--org', org.id], home)).stderr).toMatch(/^Error: no source or workflow named "shared-flow": not among the sources of org o_\w+ or your account, nor the workflows of org o_\w+/);
    expect((await pd(['runs', 'shared-flow'], home)).stdout).toContain(`No runs yet for ${mine.id}`);
    expect((await pd(['delete', mine.id], home)).code).toBe(0);
  });

  it('pd dev workflow.yaml --json prints the deployed workflow as its first line of stdout', async () => {
    writeFileSync(join(dir, 'dev-json.yaml'), WORKFLOW.replace('name: cli-flow', 'name: dev-json-flow'));
    const dev = pdSpawn(['dev', 'dev-json.yaml', '--json'], home, {}, dir);
    try {
      await eventually(async () => dev.stderr().includes('Watching'), { what: 'the watch', timeoutMs: 60_000 });
      const first = json<{ id: string; name: string; deployment_id: string }>(dev.stdout().split('\n')[0]);
      expect(first).toEqual(expect.objectContaining({ name: 'dev-json-flow', id: expect.stringMatching(/^p_/), deployment_id: expect.stringMatching(/^d_/) }));
    } finally {
      expect(await dev.interrupt()).toBe(0);
    }
    expect((await pd(['delete', 'dev-json-flow'], home)).code).toBe(0);
  });

  it('prints (pd deploy, pd list workflows) the endpoint of a workflow triggered by an inline HTTP source, where its requests go', async () => {
    writeFileSync(join(dir, 'hook.js'), 'module.exports = { name: "Hook", version: "1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };\n');
    writeFileSync(join(dir, 'hooked.yaml'), ['name: hooked-flow', 'trigger:', '  source: { component: ./hook.js }', 'steps:', '  - name: first', '    code: ./first.mjs', ''].join('\n'));
    const r = await pd(['deploy', 'hooked.yaml'], home, {}, dir);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const endpoint = /endpoint:\s+(\S+)/.exec(r.stdout)?.[1];
    expect(endpoint).toMatch(/\/e\/en/);
    const listed = (await pd(['list', 'workflows'], home)).stdout.split('\n').find((l) => l.includes('hooked-flow'));
    expect(listed?.trim().endsWith(endpoint!)).toBe(true);
    expect((await fetch(endpoint!, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":7}' })).status).toBe(200);
    await eventually(async () => (await pd(['events', 'hooked-flow', '--json'], home)).stdout.includes('"n": 7'), { what: 'the run of the request' });
    expect((await pd(['delete', 'hooked-flow'], home)).code).toBe(0);
  });

  it("deploys the definition example of docs/workflows.md as written, once its action key is published", async () => {
    const doc = readFileSync(join(__dirname, '..', 'docs', 'workflows.md'), 'utf8');
    const yaml = /```yaml\n(name: new-order-to-slack[\s\S]*?)```/.exec(doc)?.[1];
    expect(yaml).toBeDefined();
    writeFileSync(join(dir, 'doc-example.yaml'), yaml!);
    writeFileSync(join(dir, 'normalize.mjs'), 'export default defineComponent({ async run({ steps }) { return { summary: `order ${steps.trigger.event.body.order}` }; } });\n');
    const unpublished = await pd(['deploy', 'doc-example.yaml'], home, { SLACK_TOKEN: 'xoxb-doc' }, dir);
    expect(unpublished.code).not.toBe(0);
    expect(unpublished.stderr).toContain('steps[1].action: no component slack-send-message');
    writeFileSync(join(dir, 'slack-send-message.mjs'), [
      'export default defineComponent({ key: "slack-send-message", name: "Send Message", version: "0.0.1", type: "action",',
      '  props: { slack: { type: "app", app: "slack" }, channel: { type: "string" }, text: { type: "string" } },',
      '  async run({ $ }) { $.send.emit({ raw_event: { channel: this.channel, text: this.text, token: this.slack.$auth.oauth_access_token } }); } });',
      '',
    ].join('\n'));
    expect((await pd(['publish', 'slack-send-message.mjs'], home, {}, dir)).code).toBe(0);
    const r = await pd(['deploy', 'doc-example.yaml'], home, { SLACK_TOKEN: 'xoxb-doc' }, dir);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const endpoint = /endpoint:\s+(\S+)/.exec(r.stdout)?.[1];
    // customResponse: true and no step responds: the caller gets 502, the run still succeeds.
    expect((await fetch(endpoint!, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"order":7}' })).status).toBe(502);
    await eventually(async () => (await pd(['events', 'new-order-to-slack', '--json'], home)).stdout.includes('"text": "order 7"'), { what: 'the notify step to run' });
    expect((await pd(['delete', 'new-order-to-slack'], home)).code).toBe(0);
  });

  it('names an unknown name as neither a source nor a workflow', async () => {
    const nosuch = await pd(['delete', 'nosuch'], home);
    expect([nosuch.code, nosuch.stderr]).toEqual([1, 'Error: no source or workflow named "nosuch" in your account (see `pd list sources` and `pd list workflows`)\n']);
  });

  it('refuses extra arguments with a usage error (exit 2)', async () => {
    const extra = await pd(['runs', '-n', '1', 'wf', 'extra'], home);
    expect([extra.code, extra.stdout, extra.stderr]).toEqual([2, '', 'Error: unexpected argument "extra" (usage: pd runs [-n <count>] <workflow name or id>); run `pd runs --help`\n']);
    for (const args of [['delete', 'a', 'b'], ['replay', 'wf', '1-0', 'x'], ['login', 'x'], ['config', 'get', 'org_id', 'x'], ['config', 'path', 'x']]) {
      const r = await pd(args, home);
      expect([args, r.code, r.stderr]).toEqual([args, 2, expect.stringMatching(/^Error: unexpected argument/)]);
    }
    // An unknown action of pd config is an unknown command, as pd list's unknown kind is.
    const action = await pd(['config', 'frobnicate'], home);
    expect([action.code, action.stdout, action.stderr]).toEqual([2, '', 'Error: unknown config action "frobnicate": use get, set, unset or path; run `pd config --help`\n']);
  });

  it('says when pd config unset finds the key not set', async () => {
    const unset = await pd(['config', 'unset', 'org_id'], home);
    expect([unset.code, unset.stdout]).toEqual([0, 'org_id was not set in profile "default": nothing to remove\n']);
    expect(json<{ removed: boolean }>((await pd(['config', 'unset', 'org_id', '--json'], home)).stdout).removed).toBe(false);
    expect((await pd(['config', 'set', 'org_id', 'o_x'], home)).code).toBe(0);
    expect((await pd(['config', 'unset', 'org_id'], home)).stdout).toBe('Removed org_id from profile "default"\n');
  });

  it('refuses to deploy a JSON file that is not a workflow definition', async () => {
    writeFileSync(join(dir, 'not-a-workflow.json'), JSON.stringify({ name: 'x', steps: [] }));
    const notWf = await pd(['deploy', 'not-a-workflow.json'], home, {}, dir);
    expect([notWf.code, notWf.stderr]).toEqual([1, 'Error: not-a-workflow.json is not a workflow definition: a workflow file needs `trigger` and `steps` (docs/workflows.md); sources are deployed from .js/.mjs files\n']);
  });

  it('runs a published Pipedream action from npm (@pipedream/helper_functions base64-decode-string) as a step', async () => {
    writeFileSync(join(dir, 'encode.mjs'), 'export default defineComponent({ async run({ steps }) { return Buffer.from(steps.trigger.event.text, "utf8").toString("base64"); } });\n');
    writeFileSync(join(dir, 'publish.mjs'), 'export default defineComponent({ async run({ steps, $ }) { $.send.emit({ raw_event: { decoded: steps.decode.data } }); } });\n');
    writeFileSync(join(dir, 'npm-flow.yaml'), [
      'name: npm-flow',
      'trigger: { manual: {} }',
      'steps:',
      '  - name: encode',
      '    code: ./encode.mjs',
      '  - name: decode',
      '    action: npm:@pipedream/helper_functions@0.3.13/actions/base64-decode-string/base64-decode-string.mjs',
      '    props: { data: "{{steps.encode.$return_value}}" }',
      '  - name: publish',
      '    code: ./publish.mjs',
      '',
    ].join('\n'));
    // npm's own cache of this machine (the test's HOME is a fresh directory), and the CA settings npm may need to reach its registry here.
    const npmCache: Record<string, string> = { npm_config_cache: process.env.npm_config_cache ?? join(process.env.HOME ?? '/root', '.npm') };
    for (const name of ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy', 'npm_config_registry']) {
      if (process.env[name]) npmCache[name] = process.env[name] as string;
    }
    const deployed = await pd(['deploy', 'npm-flow.yaml', '--json'], home, npmCache, dir);
    expect(deployed.stderr).toBe('');
    const wf = json<{ id: string }>(deployed.stdout);
    expect((await pd(['run', wf.id, '--event', '{"text":"héllo from npm"}'], home)).code).toBe(0);
    const events = await eventually(async () => {
      const list = json<{ event: { raw_event: { decoded: string } } }[]>((await pd(['events', wf.id, '--json'], home)).stdout);
      return list.length ? list : undefined;
    }, { what: 'the decoded event', timeoutMs: 60_000 });
    expect(events[0].event.raw_event).toEqual({ decoded: 'héllo from npm' });
    const runs = json<{ steps: { name: string; exports?: Record<string, unknown> }[] }[]>((await pd(['runs', '-n', '1', wf.id, '--json'], home)).stdout);
    expect(runs[0].steps[1]).toEqual(expect.objectContaining({ name: 'decode', exports: { data: 'héllo from npm' } }));
  });
});
