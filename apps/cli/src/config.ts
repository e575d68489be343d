import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError } from './errors';

/**
 * The CLI's configuration, stored like Pipedream's `pd`: an INI-like file at
 * `$XDG_CONFIG_HOME/pipedream/config` (default `~/.config/pipedream/config`).
 * Keys before any `[section]` (or in `[default]`) form the default profile;
 * `[name]` sections are named profiles. The CLI is a client tool, so this module
 * is its one place reading the environment (`PD_*`, `XDG_CONFIG_HOME`, `HOME`).
 */
export const CONFIG_KEYS = ['api_key', 'api_base_url', 'org_id'] as const;
export type ConfigKey = (typeof CONFIG_KEYS)[number];
export type Profile = Partial<Record<ConfigKey, string>>;
export type ConfigFile = Map<string, Record<string, string>>;

export const DEFAULT_PROFILE = 'default';
export const DEFAULT_API_BASE_URL = 'http://localhost:3000/v1';

/** What a command runs with after flags, environment and the config file are merged. */
export interface ResolvedConfig {
  profile: string;
  apiKey?: string;
  apiBaseUrl: string;
  orgId?: string;
  configPath: string;
}

export interface ConfigOverrides {
  profile?: string;
  apiKey?: string;
  apiBaseUrl?: string;
  orgId?: string;
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg && xdg.trim() !== '' ? xdg : join(env.HOME && env.HOME.trim() !== '' ? env.HOME : homedir(), '.config');
  return join(base, 'pipedream', 'config');
}

/** Parses the INI-like text; `#` and `;` start comments; values may be quoted. */
export function parseConfig(text: string): ConfigFile {
  const file: ConfigFile = new Map([[DEFAULT_PROFILE, {}]]);
  let current = file.get(DEFAULT_PROFILE) as Record<string, string>;
  text.split(/\r?\n/).forEach((raw) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) return;
    const section = /^\[\s*([^\]]+?)\s*\]$/.exec(line);
    if (section) {
      const name = section[1];
      if (!file.has(name)) file.set(name, {});
      current = file.get(name) as Record<string, string>;
      return;
    }
    const eq = line.indexOf('=');
    if (eq <= 0) return;
    const key = line.slice(0, eq).trim();
    let value = line.slice(eq + 1).trim();
    if (value.length >= 2 && ((value.startsWith('"') && value.endsWith('"')) || (value.startsWith("'") && value.endsWith("'")))) value = value.slice(1, -1);
    current[key] = value;
  });
  return file;
}

export function serializeConfig(file: ConfigFile): string {
  const lines: string[] = [];
  const write = (values: Record<string, string>): void => {
    for (const [k, v] of Object.entries(values)) lines.push(`${k} = ${v}`);
  };
  write(file.get(DEFAULT_PROFILE) ?? {});
  for (const [name, values] of file) {
    if (name === DEFAULT_PROFILE || Object.keys(values).length === 0) continue;
    if (lines.length > 0) lines.push('');
    lines.push(`[${name}]`);
    write(values);
  }
  return lines.join('\n') + '\n';
}

export function readConfigFile(path: string): ConfigFile {
  if (!existsSync(path)) return parseConfig('');
  try {
    return parseConfig(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new CliError(`cannot read the config file ${path}: ${(e as Error).message}`);
  }
}

/** Writes atomically with mode 600: the file holds API keys. */
export function writeConfigFile(path: string, file: ConfigFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, serializeConfig(file), { mode: 0o600 });
  renameSync(tmp, path);
}

export function profileName(overrides: ConfigOverrides, env: NodeJS.ProcessEnv = process.env): string {
  return overrides.profile || env.PD_PROFILE || DEFAULT_PROFILE;
}

/** Flags beat environment variables, which beat the profile, which beats the defaults. */
export function resolveConfig(overrides: ConfigOverrides, env: NodeJS.ProcessEnv = process.env): ResolvedConfig {
  const path = configPath(env);
  const profile = profileName(overrides, env);
  const file = readConfigFile(path);
  const values: Profile = file.get(profile) ?? {};
  if (profile !== DEFAULT_PROFILE && !file.has(profile) && !env.PD_API_KEY && !overrides.apiKey) {
    throw new CliError(`profile "${profile}" is not in ${path}: run \`pd login --profile ${profile}\``);
  }
  const pick = (flag: string | undefined, envName: string, key: ConfigKey): string | undefined => {
    const v = flag ?? env[envName] ?? values[key];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  return {
    profile,
    apiKey: pick(overrides.apiKey, 'PD_API_KEY', 'api_key'),
    apiBaseUrl: normalizeBaseUrl(pick(overrides.apiBaseUrl, 'PD_API_BASE_URL', 'api_base_url') ?? DEFAULT_API_BASE_URL),
    orgId: pick(overrides.orgId, 'PD_ORG_ID', 'org_id'),
    configPath: path,
  };
}

/** Sets (or, with `undefined`, removes) keys of one profile and saves the file. */
export function updateProfile(path: string, profile: string, changes: Profile): void {
  // The file is line-based: a line break (or any control character) in a value or profile name would write other lines.
  if (/[\u0000-\u001f\u007f\]\[]/.test(profile)) throw new CliError(`profile name "${JSON.stringify(profile).slice(1, -1)}" may not contain control characters or brackets`);
  for (const [k, v] of Object.entries(changes)) {
    if (v !== undefined && /[\u0000-\u001f\u007f]/.test(v)) throw new CliError(`${k} may not contain line breaks or other control characters: nothing was saved`);
    if (k === 'api_base_url' && v) assertHttpUrl(v);
  }
  const file = readConfigFile(path);
  const values = { ...(file.get(profile) ?? {}) };
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === '') delete values[k];
    else values[k] = v;
  }
  file.set(profile, values);
  writeConfigFile(path, file);
}

/** An API base URL the CLI can call: http or https, with a host, nothing to escape. */
export function assertHttpUrl(value: string): void {
  let u: URL | undefined;
  try {
    u = new URL(value);
  } catch {
    u = undefined;
  }
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || !u.hostname || /\s/.test(value)) {
    throw new CliError(`api_base_url must be an http or https URL such as ${DEFAULT_API_BASE_URL}, got "${value}": nothing was saved`);
  }
}

export function isConfigKey(key: string): key is ConfigKey {
  return (CONFIG_KEYS as readonly string[]).includes(key);
}

/** The base URL `pd login` verifies against: flag, env, the profile's, the default. */
export function loginBaseUrl(flag: string | undefined, stored: string | undefined, env: NodeJS.ProcessEnv = process.env): { url: string; explicit: boolean } {
  const explicit = flag || env.PD_API_BASE_URL || stored;
  return { url: normalizeBaseUrl(explicit || DEFAULT_API_BASE_URL), explicit: Boolean(explicit) };
}

/**
 * Drops trailing slashes and adds `/v1` to a bare origin (`http://localhost:3000`),
 * the usual slip when copying the address the server printed.
 */
export function normalizeBaseUrl(url: string): string {
  const trimmed = url.trim().replace(/\/+$/, '');
  try {
    const u = new URL(trimmed);
    if ((u.protocol === 'http:' || u.protocol === 'https:') && (u.pathname === '/' || u.pathname === '') && !u.search && !u.hash) return `${trimmed}/v1`;
  } catch {
    /* not a URL: left as given, the request reports it */
  }
  return trimmed;
}

/** True when interactive prompts are possible. */
export function isInteractive(): boolean {
  return Boolean(process.stdin.isTTY && process.stderr.isTTY) && process.env.CI !== 'true';
}

/** `http://host:port` of the API, for SSE and endpoint URLs. */
export function apiOrigin(apiBaseUrl: string): string {
  return apiBaseUrl.replace(/\/v1$/, '');
}
