import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiOrigin, configPath, loginBaseUrl, normalizeBaseUrl, parseConfig, resolveConfig, serializeConfig, updateProfile } from './config';

describe('pd config file', () => {
  it('reads top-level keys as the default profile and [sections] as named profiles', () => {
    const file = parseConfig('# comment\napi_key = k1\napi_base_url = "http://a/v1"\n\n[staging]\napi_key=k2\n; another\norg_id = o_1\n[default]\norg_id = o_d\n');
    expect(file.get('default')).toEqual({ api_key: 'k1', api_base_url: 'http://a/v1', org_id: 'o_d' });
    expect(file.get('staging')).toEqual({ api_key: 'k2', org_id: 'o_1' });
    expect(parseConfig(serializeConfig(file))).toEqual(file);
  });

  it('finds the file under XDG_CONFIG_HOME, else HOME/.config', () => {
    expect(configPath({ XDG_CONFIG_HOME: '/x', HOME: '/h' })).toBe('/x/pipedream/config');
    expect(configPath({ HOME: '/h' })).toBe('/h/.config/pipedream/config');
  });

  it('resolves flags over env over profile over defaults, and writes the file with mode 600', () => {
    const home = mkdtempSync(join(tmpdir(), 'pd-cfg-'));
    const env = { HOME: home };
    expect(resolveConfig({}, env)).toMatchObject({ profile: 'default', apiKey: undefined, apiBaseUrl: 'http://localhost:3000/v1' });
    const path = configPath(env);
    updateProfile(path, 'default', { api_key: 'file-key', api_base_url: 'http://file/v1/' });
    updateProfile(path, 'ci', { api_key: 'ci-key' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8')).toBe('api_key = file-key\napi_base_url = http://file/v1/\n\n[ci]\napi_key = ci-key\n');
    expect(resolveConfig({}, env)).toMatchObject({ apiKey: 'file-key', apiBaseUrl: 'http://file/v1' });
    expect(resolveConfig({}, { ...env, PD_API_KEY: 'env-key', PD_API_BASE_URL: 'http://env/v1' })).toMatchObject({ apiKey: 'env-key', apiBaseUrl: 'http://env/v1' });
    expect(resolveConfig({ apiKey: 'flag-key' }, { ...env, PD_API_KEY: 'env-key' }).apiKey).toBe('flag-key');
    expect(resolveConfig({}, { ...env, PD_PROFILE: 'ci' })).toMatchObject({ profile: 'ci', apiKey: 'ci-key' });
    expect(() => resolveConfig({ profile: 'nope' }, env)).toThrow(/profile "nope" is not in/);
    updateProfile(path, 'default', { api_base_url: undefined });
    expect(resolveConfig({}, env).apiBaseUrl).toBe('http://localhost:3000/v1');
    rmSync(home, { recursive: true, force: true });
  });

  it('adds /v1 to a bare origin and drops trailing slashes, leaving other paths alone', () => {
    expect(normalizeBaseUrl('http://localhost:3000')).toBe('http://localhost:3000/v1');
    expect(normalizeBaseUrl('http://localhost:3000/')).toBe('http://localhost:3000/v1');
    expect(normalizeBaseUrl('https://x.example.com/api/v1/')).toBe('https://x.example.com/api/v1');
    expect(normalizeBaseUrl('localhost:3000')).toBe('localhost:3000');
    expect(resolveConfig({}, { HOME: '/nonexistent', PD_API_BASE_URL: 'http://127.0.0.1:3900' }).apiBaseUrl).toBe('http://127.0.0.1:3900/v1');
    expect(loginBaseUrl('http://127.0.0.1:3900/', undefined, {})).toEqual({ url: 'http://127.0.0.1:3900/v1', explicit: true });
  });

  it('derives the origin of SSE and endpoint URLs from the base URL', () => {
    expect(apiOrigin('http://localhost:3000/v1')).toBe('http://localhost:3000');
    expect(apiOrigin('https://x.example.com/api/v1')).toBe('https://x.example.com/api');
  });
});
