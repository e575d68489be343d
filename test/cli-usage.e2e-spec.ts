import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pd, tempHome } from './support/pd';

/** The message JSON.parse gives for `text` (pd runs on the same Node as the test). */
function jsonError(text: string): string {
  try {
    JSON.parse(text);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error(`${text} is JSON`);
}

/** Usage mistakes are found before any request: no server is needed to see what a user sees. */
describe('pd usage mistakes', () => {
  let home: string;

  beforeAll(() => {
    home = tempHome();
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('refuses a missing or malformed argument as a usage mistake (exit 2) pointing to the command help', async () => {
    // pd dev looks for its file first: give it one.
    const devFile = join(home, 'dev-source.mjs');
    writeFileSync(devFile, 'export default { name: "Dev", version: "0.0.1", props: {}, async run() {} };\n');
    const cases: [string[], string][] = [
      [['deploy'], 'pd deploy needs a file, component key or URL; run `pd deploy --help`'],
      [['dev'], 'pd dev needs the file of a source component or workflow; run `pd dev --help`'],
      [['publish'], 'pd publish needs the file of an action component; run `pd publish --help`'],
      [['events'], 'pd events needs the name or id of a source or workflow; run `pd events --help`'],
      [['logs'], 'pd logs needs the name or id of a source or workflow; run `pd logs --help`'],
      [['update'], 'pd update needs the name or id of a source; run `pd update --help`'],
      [['delete'], 'pd delete needs the name or id of a source or workflow; run `pd delete --help`'],
      [['run'], 'pd run needs the name or id of a source or workflow; run `pd run --help`'],
      [['runs'], 'pd runs needs a workflow name or id; run `pd runs --help`'],
      // A PUT that changes nothing would still run the source's deactivate and activate hooks.
      [['update', 'my-source'], 'pd update my-source needs what to change: --file, --prop, --props, --active or --name; run `pd update --help`'],
      [['replay', 'my-flow'], 'pd replay needs a workflow and the id of one of its $errors events; run `pd replay --help`'],
      // The two arguments swapped, or an invocation id: no request is sent for what is no event id.
      [['replay', '1763930000000-0', 'my-flow'], '"my-flow" is not an event id: the id of a $errors event looks like 1763930000000-0, the end of an error line of `pd logs --no-follow <workflow>`; run `pd replay --help`'],
      [['replay', 'my-flow', 'inv_abc'], '"inv_abc" is not an event id: the id of a $errors event looks like 1763930000000-0, the end of an error line of `pd logs --no-follow <workflow>`; run `pd replay --help`'],
      [['events', '-n', '0', 'my-source'], '-n expects a count from 1 to 100 (the last 100 events are kept), got "0"; run `pd events --help`'],
      [['logs', '-n', 'all', 'my-source'], '-n expects a count from 1 to 100 (the last 100 events are kept), got "all"; run `pd logs --help`'],
      [['runs', '-n', '101', 'my-flow'], '-n expects a count from 1 to 100, got "101"; run `pd runs --help`'],
      [['update', 'my-source', '--active', 'maybe'], '--active expects true or false, got "maybe"; run `pd update --help`'],
      [['deploy', 'source.mjs', '--prop', 'greeting'], '--prop expects name=value, got "greeting"; run `pd deploy --help`'],
      [['update', 'my-source', '--prop', 'greeting'], '--prop expects name=value, got "greeting"; run `pd update --help`'],
      // An empty name is no name: update would change nothing (and still run the hooks), deploy would take the default.
      [['update', 'my-source', '--name', ''], '--name expects a name, got ""; run `pd update --help`'],
      [['deploy', 'source.mjs', '--name', ''], '--name expects a name, got ""; run `pd deploy --help`'],
      [['update', 'my-source', '--file', ''], '--file expects a component file, got ""; run `pd update --help`'],
      [['update', 'my-source', '--props', ''], '--props expects a JSON file, got ""; run `pd update --help`'],
      [['deploy', 'source.mjs', '--props', ''], '--props expects a JSON file, got ""; run `pd deploy --help`'],
      [['dev', devFile, '--props', ''], '--props expects a JSON file, got ""; run `pd dev --help`'],
      [['dev', devFile, '--name', ' '], '--name expects a name, got " "; run `pd dev --help`'],
      // `--dc "$ID"` with ID unset: attaching to nothing is not deploying a new source.
      [['dev', devFile, '--dc', ''], '--dc expects the id or name of a source, got ""; run `pd dev --help`'],
      // No request either for an event that is no JSON: the source is not even looked up.
      [['run', 'my-source', '--event', '{bad'], `--event expects JSON, got "{bad" (${jsonError('{bad')}); run \`pd run --help\``],
      [['config', 'get'], 'name a key: api_key, api_base_url, org_id; run `pd config --help`'],
      [['config', 'set', 'org_id'], 'pd config set org_id needs a value (`pd config unset org_id` removes it); run `pd config --help`'],
      // An empty value would remove the key while saying it was set.
      [['config', 'set', 'api_key', ''], 'pd config set api_key needs a value (`pd config unset api_key` removes it); run `pd config --help`'],
      [['config', 'get', 'bogus'], 'unknown config key "bogus": use one of api_key, api_base_url, org_id; run `pd config --help`'],
    ];
    for (const [args, message] of cases) {
      const r = await pd(args, home);
      expect([args, r.code, r.stdout, r.stderr]).toEqual([args, 2, '', `Error: ${message}\n`]);
    }
  });

  it('refuses help on an unknown command as an unknown command, and takes global options without a command as pd alone', async () => {
    const unknown = await pd(['help', 'frobnicate'], home);
    expect([unknown.code, unknown.stdout, unknown.stderr]).toEqual([2, '', 'Error: unknown command "frobnicate"; run `pd --help` for the list\n']);
    const known = await pd(['help', 'ls'], home);
    expect([known.code, known.stderr, known.stdout.split('\n')[0]]).toEqual([0, '', 'pd list — list your sources, their event streams, or your workflows']);
    const alone = await pd([], home);
    for (const args of [['--json'], ['--profile', 'staging'], ['-h', '--json']]) {
      const r = await pd(args, home);
      expect([args, r.code, r.stderr, r.stdout]).toEqual([args, 0, '', alone.stdout]);
    }
    const bogus = await pd(['--bogus'], home);
    expect([bogus.code, bogus.stderr]).toEqual([2, 'Error: unknown option --bogus; run `pd --help`\n']);
  });

  it('refuses a login --api-base-url that is no http(s) URL before sending the key anywhere, as pd config set does', async () => {
    for (const url of ['localhost:3000', 'ftp://localhost/v1']) {
      const r = await pd(['login', '--api-key', 'pd_any', '--api-base-url', url], home);
      expect([url, r.code, r.stdout, r.stderr]).toEqual([url, 1, '', `Error: api_base_url must be an http or https URL such as http://localhost:3000/v1, got "${url}": nothing was saved\n`]);
    }
    expect(existsSync(join(home, '.config', 'pipedream', 'config'))).toBe(false);
  });

  it('shows the options of each command first and its notes after them, and names --dc by id or name', async () => {
    for (const command of ['login', 'config', 'deploy', 'dev', 'publish', 'list', 'events', 'logs', 'update', 'delete', 'run', 'replay', 'runs']) {
      const help = (await pd([command, '--help'], home)).stdout;
      const options = help.split('\n\nOptions:\n')[1]?.split('\n\n')[0]?.split('\n').map((l) => l.slice(2)) ?? [];
      const firstNote = options.findIndex((l) => /^[A-Za-z]/.test(l));
      const optionAfterNote = firstNote < 0 ? undefined : options.slice(firstNote).find((l) => l.startsWith('-'));
      expect([command, optionAfterNote]).toEqual([command, undefined]);
    }
    expect((await pd(['dev', '--help'], home)).stdout).toContain('Usage: pd dev <file> [--dc <id or name>]');
  });

  it('prints pd config path as JSON with --json, as every other command', async () => {
    const r = await pd(['config', 'path', '--json'], home);
    expect([r.code, r.stderr, JSON.parse(r.stdout)]).toEqual([0, '', { config_path: join(home, '.config', 'pipedream', 'config') }]);
  });

  it('says file not found for a missing workflow file (.yaml, .yml, .json), as for a missing .js or .mjs', async () => {
    // Nothing is asked of the API: a closed port would say so.
    const env = { PD_API_KEY: 'pd_any', PD_API_BASE_URL: 'http://127.0.0.1:9/v1' };
    for (const args of [['deploy', 'workflow.yaml'], ['deploy', 'flow.yml'], ['deploy', 'flow.json'], ['dev', 'workflow.yaml']]) {
      const r = await pd(args, home, env);
      expect([args, r.code, r.stdout, r.stderr]).toEqual([args, 1, '', `Error: file not found: ${args[1]}\n`]);
    }
  });

  it('says that a folder is a folder, not a missing file', async () => {
    const env = { PD_API_KEY: 'pd_any', PD_API_BASE_URL: 'http://127.0.0.1:9/v1' };
    mkdirSync(join(home, 'sources'), { recursive: true });
    for (const command of ['deploy', 'dev', 'publish']) {
      const r = await pd([command, 'sources'], home, env, home);
      expect([command, r.code, r.stdout, r.stderr]).toEqual([command, 1, '', 'Error: sources is a folder: name the component file in it (sources/<name>/<name>.mjs)\n']);
    }
  });
});
