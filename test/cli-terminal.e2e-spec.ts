import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createUser, TestUser } from './support/accounts';
import { pd, PdResult, tempHome } from './support/pd';
import { eventually, startSystem, System } from './support/system';

/** What a terminal acts on instead of showing: C0 controls but tab and line feed, DEL, C1 controls, bidi overrides. */
const TERMINAL_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/**
 * Escape sequences as whoever knows a source's endpoint URL sends them: the path becomes the summary, the
 * console line and the thrown error carry more. OSC 0 sets the window title, CSI 2J clears the screen,
 * U+009B is an 8-bit CSI, U+202E reverses what follows.
 */
const HOSTILE_SOURCE = `module.exports = {
  name: "Terminal",
  version: "0.0.1",
  props: { http: "$.interface.http" },
  async run(event) {
    const path = decodeURIComponent(event.path);
    console.log("saw " + path + "\\u001b[2J\\rspoofed");
    this.$emit({ path }, { summary: "GET " + path });
    if (event.body && event.body.fail) throw new Error("failed \\u001b]52;c;c2VjcmV0\\u0007 here\\nsecond line \\u009b2J");
  },
};
`;
const HOSTILE_PATH = `/${encodeURIComponent('\u001b]0;PWNED\u0007\u001b[2J\u009b31m\u202etxt.exe')}`;
const HOSTILE_NAME = 'term\u001b[41mRED\u001b[0m\u0007\nfake row';

describe('pd against terminal escape sequences in what the API answers', () => {
  let system: System;
  let user: TestUser;
  let home: string;
  let dir: string;
  let env: Record<string, string>;

  const shown = (r: PdResult): string => r.stdout + r.stderr;

  beforeAll(async () => {
    system = await startSystem();
    user = createUser(system);
    home = tempHome();
    dir = mkdtempSync(join(tmpdir(), 'pd-terminal-'));
    writeFileSync(join(dir, 'terminal.js'), HOSTILE_SOURCE);
    writeFileSync(join(dir, 'broken.js'), 'throw new Error("cannot load \\u001b]0;T\\u0007\\nsecond line \\u009b2J");\n');
    env = { PD_API_BASE_URL: system.baseUrl, PD_API_KEY: user.apiKey };
  });
  afterAll(async () => {
    await system?.stop();
    for (const d of [home, dir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('shows names, summaries, log lines and errors with their control characters escaped, each on its own line', async () => {
    const deployed = await pd(['deploy', join(dir, 'terminal.js'), '--name', HOSTILE_NAME, '--json'], home, env);
    expect(deployed.code).toBe(0);
    const source = JSON.parse(deployed.stdout) as { id: string; name: string; endpoint_url: string };
    expect(source.name).toBe(HOSTILE_NAME);
    for (const body of [{}, { fail: true }]) {
      const res = await fetch(source.endpoint_url + HOSTILE_PATH, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status).toBe(200);
    }
    await eventually(async () => {
      const r = await pd(['logs', '--no-follow', '--json', source.id], home, env);
      return (JSON.parse(r.stdout) as Array<{ metadata: { name: string } }>).some((e) => e.metadata.name === '$errors');
    }, { timeoutMs: 60_000, what: 'the $errors event' });

    const list = await pd(['list', 'sources'], home, env);
    expect(list.code).toBe(0);
    expect(shown(list)).not.toMatch(TERMINAL_CONTROL);
    expect(list.stdout.trim().split('\n')).toHaveLength(2);
    expect(list.stdout).toContain('term\\x1b[41mRED\\x1b[0m\\x07\\nfake row');
    const streams = await pd(['list', 'streams'], home, env);
    expect(shown(streams)).not.toMatch(TERMINAL_CONTROL);
    expect(streams.stdout.trim().split('\n')).toHaveLength(2);

    const events = await pd(['events', '-n', '5', source.id], home, env);
    expect(events.code).toBe(0);
    expect(shown(events)).not.toMatch(TERMINAL_CONTROL);
    expect(events.stdout).toContain('GET /\\x1b]0;PWNED\\x07\\x1b[2J\\x9b31m\\u202etxt.exe');
    // The event's JSON escapes what JSON.stringify leaves as it is (C1 controls, bidi overrides) as \u escapes.
    expect(events.stdout).toContain('"path": "/\\u001b]0;PWNED\\u0007\\u001b[2J\\u009b31m\\u202etxt.exe"');

    const logs = await pd(['logs', '--no-follow', source.id], home, env);
    expect(logs.code).toBe(0);
    expect(shown(logs)).not.toMatch(TERMINAL_CONTROL);
    expect(logs.stdout).toContain('\\x1b[2J\\rspoofed');
    expect(logs.stdout).toMatch(/ error Error: failed \\x1b\]52;c;c2VjcmV0\\x07 here\nsecond line \\x9b2J \(event \d+-\d+\)/);

    const asJson = await pd(['events', '-n', '5', '--json', source.id], home, env);
    expect(asJson.stdout).not.toMatch(TERMINAL_CONTROL);
    const parsed = JSON.parse(asJson.stdout) as Array<{ event: { path: string } }>;
    expect(parsed.map((e) => e.event.path)).toContain(decodeURIComponent(HOSTILE_PATH));

    const deleted = await pd(['delete', source.id], home, env);
    expect(deleted.code).toBe(0);
    expect(shown(deleted)).not.toMatch(TERMINAL_CONTROL);
  });

  it("prints an API error that quotes a component's message as one line, its controls escaped", async () => {
    const r = await pd(['deploy', join(dir, 'broken.js')], home, env);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).not.toMatch(TERMINAL_CONTROL);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^Error: .*cannot load \\x1b\]0;T\\x07\\nsecond line \\x9b2J/);
  });
});
