import { ApiClient } from '../api-client';
import { data, obj, readShape, ShapeError, ShapeOf, str as string } from '../answer-shape';
import { Command, str, usageError } from '../command';
import { assertHttpUrl, CONFIG_KEYS, configPath, DEFAULT_API_BASE_URL, isConfigKey, loginBaseUrl, normalizeBaseUrl, profileName, readConfigFile, updateProfile } from '../config';
import { CliError, isNotFound } from '../errors';
import { fields, oneLine, out, printJson, withSpinner } from '../output';
import { ask } from '../prompt';

const USER = obj({ id: string, username: string, email: string });
type User = ShapeOf<typeof USER>;

export const loginCommand: Command = {
  name: 'login',
  summary: 'verify an API key and save it to a profile',
  usage: 'pd login [--api-key <key>] [--api-base-url <url>] [--org-id <o_…>] [--profile <name>]',
  help: [
    '--api-key <key>        the API key (prompted for on a terminal when absent)',
    '--api-base-url <url>   the API base URL ending in /v1 (default: the profile\'s, else ' + DEFAULT_API_BASE_URL + ')',
    '--org-id <o_…>         default org for commands that create or list resources',
  ],
  examples: ['pd login --api-key pd_abc123', 'pd login --profile staging --api-base-url https://pd.example.com/v1'],
  options: { 'api-key': { type: 'string' }, 'api-base-url': { type: 'string' }, 'org-id': { type: 'string' } },
  maxPositionals: 0,
  async run(ctx, { values }) {
    const path = configPath();
    const profile = profileName(ctx.overrides);
    const existing = readConfigFile(path).get(profile) ?? {};
    const base = loginBaseUrl(str(values, 'api-base-url'), existing.api_base_url);
    const apiBaseUrl = base.url;
    // Checked before the key is sent anywhere, as `pd config set api_base_url` checks it.
    assertHttpUrl(apiBaseUrl);
    let apiKey = str(values, 'api-key');
    if (!apiKey) {
      if (!ctx.interactive) throw new CliError('no API key given: pass --api-key <key> (prompting needs a terminal)');
      apiKey = (await ask(`API key for ${apiBaseUrl}: `, { secret: true })).trim();
      if (!apiKey) throw new CliError('no API key entered');
    }
    const client = new ApiClient({ profile, apiKey, apiBaseUrl, configPath: path });
    const answer = await withSpinner(`Verifying the key with ${apiBaseUrl}`, () => client.request('GET', '/users/me'));
    const me = readUser(answer, apiBaseUrl);
    const orgId = str(values, 'org-id');
    if (orgId) await assertMember(client, orgId, me.data);
    updateProfile(path, profile, {
      api_key: apiKey,
      ...(base.explicit ? { api_base_url: apiBaseUrl } : {}),
      ...(orgId !== undefined ? { org_id: orgId } : {}),
    });
    if (ctx.json) return printJson({ profile, config_path: path, api_base_url: apiBaseUrl, user: me.data });
    out(oneLine(`Logged in as ${me.data.username} <${me.data.email}> (${me.data.id})`));
    out(`Saved profile "${profile}" to ${path}`);
  },
};

/** Any server that answers JSON would otherwise "verify" the key, and the profile would point at it. */
function readUser(answer: unknown, apiBaseUrl: string): { data: User } {
  try {
    return readShape(answer, data(USER));
  } catch (e) {
    if (!(e instanceof ShapeError)) throw e;
    throw new CliError(`GET ${apiBaseUrl}/users/me did not answer a user (${e.message}): is api_base_url ${apiBaseUrl} right? (nothing was saved)`);
  }
}

/** An org the key's user cannot act in is refused at login, not at the first command that uses it. */
async function assertMember(client: ApiClient, orgId: string, user: User): Promise<void> {
  try {
    await withSpinner(`Checking org ${orgId}`, () => client.request('GET', `/orgs/${encodeURIComponent(orgId)}/sources`, { query: { limit: 1 } }));
  } catch (e) {
    if (isNotFound(e)) throw new CliError(`org ${orgId} not found, or ${user.username} is not a member of it: check --org-id (nothing was saved)`);
    throw e;
  }
}

function mask(key: string | undefined): string | undefined {
  if (!key) return undefined;
  return key.length <= 8 ? '********' : `${key.slice(0, 6)}…${key.slice(-4)}`;
}

export const configCommand: Command = {
  name: 'config',
  summary: 'show or change the CLI configuration',
  usage: 'pd config [get <key> | set <key> <value> | unset <key> | path] [--profile <name>]',
  help: [
    'pd config                 show the effective settings of the profile (API key masked)',
    'pd config get <key>       print one value of the profile',
    'pd config set <key> <v>   save a value in the profile',
    'pd config unset <key>     remove a value from the profile',
    'pd config path            print the config file path',
    `keys: ${CONFIG_KEYS.join(', ')}`,
  ],
  examples: ['pd config set api_base_url http://localhost:3000/v1', 'pd config get api_key --profile staging'],
  options: {},
  maxPositionals: 3,
  async run(ctx, { positionals }) {
    const [action, key, value] = positionals;
    const path = configPath();
    const profile = profileName(ctx.overrides);
    const checkKey = (k: string | undefined): string => {
      if (!k) throw usageError('config', `name a key: ${CONFIG_KEYS.join(', ')}`);
      if (!isConfigKey(k)) throw usageError('config', `unknown config key "${k}": use one of ${CONFIG_KEYS.join(', ')}`);
      return k;
    };
    // config takes a fixed number of arguments per action (3 at most, which main checks).
    const takes: Record<string, number> = { path: 1, get: 2, unset: 2, set: 3 };
    const allowed = action === undefined ? 0 : takes[action] ?? 1;
    if (positionals.length > allowed) throw usageError('config', `unexpected argument "${positionals[allowed]}" after pd config${positionals.slice(0, allowed).map((a) => ` ${a}`).join('')}`);
    if (action === 'path') return ctx.json ? printJson({ config_path: path }) : out(path);
    if (action === 'set') {
      const k = checkKey(key);
      // An empty value would remove the key while this says it was set.
      if (value === undefined || value.trim() === '') throw usageError('config', `pd config set ${k} needs a value (\`pd config unset ${k}\` removes it)`);
      const saved = k === 'api_base_url' ? normalizeBaseUrl(value) : value;
      updateProfile(path, profile, { [k]: saved });
      return ctx.json ? printJson({ profile, [k]: saved }) : out(`Set ${k} in profile "${profile}" (${path})`);
    }
    if (action === 'unset') {
      const k = checkKey(key);
      // Unsetting what is not set leaves the wanted state (exit 0), but says that nothing was removed.
      const was = (readConfigFile(path).get(profile) ?? {})[k];
      if (was !== undefined) updateProfile(path, profile, { [k]: undefined });
      if (ctx.json) return printJson({ profile, [k]: null, removed: was !== undefined });
      return out(was !== undefined ? `Removed ${k} from profile "${profile}"` : `${k} was not set in profile "${profile}": nothing to remove`);
    }
    const stored = readConfigFile(path).get(profile) ?? {};
    if (action === 'get') {
      const k = checkKey(key);
      const v = stored[k];
      if (v === undefined) throw new CliError(`${k} is not set in profile "${profile}"`);
      return ctx.json ? printJson({ profile, [k]: v }) : out(v);
    }
    if (action !== undefined) throw usageError('config', `unknown config action "${action}": use get, set, unset or path`);
    const cfg = ctx.config;
    if (ctx.json) return printJson({ profile, config_path: path, api_base_url: cfg.apiBaseUrl, api_key: mask(cfg.apiKey) ?? null, org_id: cfg.orgId ?? null });
    out(fields([
      ['profile', profile],
      ['config file', path],
      ['api_base_url', cfg.apiBaseUrl],
      ['api_key', mask(cfg.apiKey) ?? '(not set: run `pd login`)'],
      ['org_id', cfg.orgId],
    ]));
  },
};
