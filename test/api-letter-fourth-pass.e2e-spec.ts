import { client, createUser, TestUser } from './support/accounts';
import { rawRequest } from './support/raw-http';
import { startSystem, System } from './support/system';

/** What a fourth audit of README.md, docs/*.md and the spec, run example by example against the apps, found otherwise. */
describe('API to the letter, fourth pass', () => {
  let system: System;
  let user: TestUser;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
    user = createUser(system);
    api = client(system, user.apiKey);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('sends Cache-Control: no-store and X-Content-Type-Options: nosniff with every answer, also those written below the hooks (431, 414, 400 not HTTP, CONNECT)', async () => {
    const auth = `Authorization: Bearer ${user.apiKey}\r\n`;
    const requests: [string, number][] = [
      [`GET /v1/users/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
      [`GET /v1/users/me?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 414],
      [`GET /v1/sources/${'a'.repeat(600)} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 414],
      [`GET /v1/sources/%E0%A4%A HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 400],
      ['NOT HTTP AT ALL\r\n\r\n', 400],
      ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405],
      [`GET /v1/users/me HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 200],
    ];
    for (const [request, status] of requests) {
      const res = await rawRequest(system.origin, request);
      const line = request.slice(0, 40);
      expect([line, res.status]).toEqual([line, status]);
      expect([line, /^cache-control: no-store\r?$/im.test(res.headers), /^x-content-type-options: nosniff\r?$/im.test(res.headers)]).toEqual([line, true, true]);
    }
    expect((await api.get('/users/me')).status).toBe(200);
  });
});
