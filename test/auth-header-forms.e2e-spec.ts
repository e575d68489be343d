import { admin, client, createUser, TestUser } from './support/accounts';
import { rawRequest } from './support/raw-http';
import { startSystem, System } from './support/system';

/**
 * The `Authorization` forms docs/api.md ("Auth") accepts and refuses, written as a hostile client would: the scheme
 * in any letter case with any spaces or tabs around the key is the key; anything else is no key, never another
 * account's or a guess at one. The answers are the documented `{ error, code }` bodies.
 */
describe('Authorization header forms', () => {
  let system: System;
  let user: TestUser;

  beforeAll(async () => {
    system = await startSystem({ REGISTRY_DIR: 'off' }, { apps: ['api'] });
    user = createUser(system);
  });
  afterAll(async () => system?.stop());

  /** GET /v1/users/me with the raw header lines `lines` (each ending in CRLF): its status, `code` and `error`. */
  const me = async (lines: string): Promise<[number, string?, string?]> => {
    const res = await rawRequest(system.origin, `GET /v1/users/me HTTP/1.1\r\nHost: x\r\n${lines}\r\n`);
    const body = res.body ? (JSON.parse(res.body) as { code?: string; error?: string; data?: { id: string } }) : {};
    return [res.status, body.code ?? body.data?.id, body.error];
  };

  it('reads the scheme in any letter case, with any spaces or tabs around the key', async () => {
    const k = user.apiKey;
    for (const h of [`Bearer ${k}`, `bearer ${k}`, `BEARER ${k}`, `Bearer\t${k}`, `Bearer    ${k}   `, `  Bearer ${k}\t`]) {
      expect([h, await me(`Authorization: ${h}\r\n`)]).toEqual([h, [200, user.id, undefined]]);
    }
  });

  it('refuses every other form with 401 or 400, and takes no key from elsewhere', async () => {
    const k = user.apiKey;
    const malformed = [401, 'unauthorized', 'malformed Authorization header: expected "Bearer <API_KEY>"'];
    const invalid = [401, 'unauthorized', 'invalid API key'];
    const missing = [401, 'unauthorized', 'missing API key: send Authorization: Bearer <API_KEY>'];
    const cases: [string, unknown[]][] = [
      [`Authorization: Basic ${k}\r\n`, malformed],
      [`Authorization: ${k}\r\n`, malformed],
      [`Authorization: Bearer\r\n`, malformed],
      [`Authorization: Bearer ${k} ${k}\r\n`, malformed],
      [`Authorization: Bearer ${k},Bearer ${k}\r\n`, malformed],
      [`Authorization: Bearer ${k.toUpperCase()}\r\n`, invalid],
      [`Authorization: Bearer "${k}"\r\n`, invalid],
      [`Authorization: Bearer ${k};\r\n`, invalid],
      [`Authorization: Bearer ${k}\r\nAuthorization: Bearer ${k}\r\n`, [400, 'invalid_request', 'send one Authorization header, not several']],
      [`Authorization: \r\nAuthorization: Bearer ${k}\r\n`, [400, 'invalid_request', 'send one Authorization header, not several']],
      // A key followed by a bare newline, or folded onto a second line, is not HTTP.
      [`Authorization: Bearer ${k}\n`, [400, 'invalid_request', 'the request is not valid HTTP']],
      [`Authorization: Bearer\r\n ${k}\r\n`, [400, 'invalid_request', 'the request is not valid HTTP']],
      [`Authorization: Bearer ${k}\u000b\r\n`, [400, 'invalid_request', 'the request is not valid HTTP']],
      [`Proxy-Authorization: Bearer ${k}\r\n`, missing],
      [`X-Api-Key: ${k}\r\n`, missing],
    ];
    for (const [lines, expected] of cases) expect([lines, await me(lines)]).toEqual([lines, expected]);
    for (const q of [`api_key=${k}`, `access_token=${k}`, `token=${k}`]) {
      const res = await client(system).get(`/users/me?${q}`);
      expect([q, res.status, res.body]).toEqual([q, 401, { error: 'missing API key: send Authorization: Bearer <API_KEY>', code: 'unauthorized' }]);
    }
  });

  it('answers a revoked or rotated key exactly as a key that never existed', async () => {
    const [revoked, rotated] = [createUser(system), createUser(system)];
    admin(system, ['keys', 'revoke', '--user', revoked.id]);
    admin(system, ['keys', 'rotate', '--user', rotated.id]);
    const answer = async (key: string) => {
      const res = await client(system, key).get('/users/me');
      return [res.status, res.headers.get('www-authenticate'), res.body];
    };
    const never = await answer(`pd_${'x'.repeat(43)}`);
    expect(never).toEqual([401, 'Bearer realm="api", error="invalid_token"', { error: 'invalid API key', code: 'unauthorized' }]);
    expect([await answer(revoked.apiKey), await answer(rotated.apiKey)]).toEqual([never, never]);
  });
});
