import { connect, type Socket } from 'node:net';
import { createUser } from './support/accounts';
import { startSystem, System } from './support/system';

/**
 * API_MAX_CONCURRENT_PER_KEY counts every request the /v1 routes answer, however its path is spelled: the router
 * decodes percent-escapes (`/%761/…` is `/v1/…`) and ignores a trailing slash, and such a request is the same work.
 */
describe('API_MAX_CONCURRENT_PER_KEY and the spelling of the path', () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem({ REGISTRY_DIR: 'off', API_MAX_CONCURRENT_PER_KEY: '1', API_QUEUE_WAIT_MS: '0' }, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

  /** A request of `key` whose body never ends: it holds the key's one turn until the socket closes. */
  const hold = async (key: string): Promise<{ socket: Socket; answered: () => boolean }> => {
    const url = new URL(system.baseUrl);
    const socket = connect(Number(url.port), url.hostname);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    let answered = false;
    socket.on('data', () => (answered = true));
    socket.write(`POST /v1/sources HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"compo`);
    return { socket, answered: () => answered };
  };

  /** Holds the key's turn: a plain /v1 request of the key is refused while the held one is still unanswered. */
  const holdTurn = async (key: string, get: (path: string) => Promise<Response>): Promise<Socket> => {
    for (let attempt = 0; attempt < 20; attempt++) {
      const held = await hold(key);
      await sleep(100);
      if ((await get('/v1/users/me')).status === 429 && !held.answered()) return held.socket;
      held.socket.destroy();
    }
    throw new Error('the held request never took the key\'s turn');
  };

  it('answers 429 to a second request of the key whichever way /v1 is written', async () => {
    const { apiKey } = createUser(system);
    const origin = new URL(system.baseUrl).origin;
    const get = (path: string) => fetch(origin + path, { headers: { authorization: `Bearer ${apiKey}` } });
    const socket = await holdTurn(apiKey, get);
    try {
      const answers: Record<string, number> = {};
      for (const path of ['/v1/users/me', '/%761/users/me', '/v%31/users/me', '/%76%31/users/me', '/v1/users/me/', '/v1/%75sers/me']) answers[path] = (await get(path)).status;
      expect(answers).toEqual({ '/v1/users/me': 429, '/%761/users/me': 429, '/v%31/users/me': 429, '/%76%31/users/me': 429, '/v1/users/me/': 429, '/v1/%75sers/me': 429 });
    } finally {
      socket.destroy();
    }
    // Once it is gone, the key is answered again.
    for (let i = 0; i < 50 && (await get('/v1/users/me')).status !== 200; i++) await sleep(100);
    expect((await get('/v1/users/me')).status).toBe(200);
  });
});
