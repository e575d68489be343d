import { connect, type Socket } from 'node:net';
import { Client } from 'pg';
import { createUser } from './support/accounts';
import { rawRequest } from './support/raw-http';
import { startSystem, System } from './support/system';

/**
 * API_MAX_CONCURRENT_PER_KEY counts every request the /v1 routes answer, however its path is spelled (the router
 * decodes percent-escapes: `/%761/…` is `/v1/…`, the same work), and for as long as the api works on it, also after
 * its client has gone away; requests without a key count per client address, not all in one lane, and one with a body
 * is answered before its body is read (test/api-held-bodies.e2e-spec.ts), so it cannot hold that lane.
 */
describe('API_MAX_CONCURRENT_PER_KEY against a key that tries to pass it', () => {
  let system: System;
  beforeAll(async () => {
    // 127.0.0.3 plays a reverse proxy the api trusts; 127.0.0.1 and 127.0.0.2 are clients.
    system = await startSystem({ REGISTRY_DIR: 'off', TRUST_PROXY: '127.0.0.3', API_MAX_CONCURRENT_PER_KEY: '1', API_QUEUE_WAIT_MS: '0', DB_POOL_MAX: '3', DB_POOL_ACQUIRE_TIMEOUT_MS: '300' }, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

  /** A request (of `key`, or without one) whose body never ends: it holds a turn of its lane until the socket closes. */
  const hold = async (key?: string, localAddress?: string, headers = ''): Promise<{ socket: Socket; answered: () => boolean }> => {
    const url = new URL(system.baseUrl);
    const socket = connect({ port: Number(url.port), host: url.hostname, localAddress });
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    let answered = false;
    socket.on('data', () => (answered = true));
    const auth = key ? `Authorization: Bearer ${key}\r\n` : '';
    socket.write(`POST /v1/sources HTTP/1.1\r\nHost: ${url.host}\r\n${auth}${headers}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"compo`);
    return { socket, answered: () => answered };
  };

  /** Holds the lane's one turn: `refused()` (another request of the lane is answered 429) while the held one is still unanswered. */
  const holdTurn = async (refused: () => Promise<boolean>, key?: string, localAddress?: string, headers = ''): Promise<Socket> => {
    for (let attempt = 0; attempt < 20; attempt++) {
      const held = await hold(key, localAddress, headers);
      await sleep(100);
      if ((await refused()) && !held.answered()) return held.socket;
      held.socket.destroy();
    }
    throw new Error('the held request never took the lane\'s turn');
  };

  it('answers 429 to a second request of the key whichever way /v1 is written', async () => {
    const { apiKey } = createUser(system);
    const origin = new URL(system.baseUrl).origin;
    const get = (path: string) => fetch(origin + path, { headers: { authorization: `Bearer ${apiKey}` } });
    const socket = await holdTurn(async () => (await get('/v1/users/me')).status === 429, apiKey);
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
  it('answers a request without an API key whose body never ends at once (401, its body unread): it holds no turn of its address, directly or through a trusted proxy', async () => {
    const { host } = new URL(system.origin);
    const status = async (localAddress: string, headers: string): Promise<number> => (await rawRequest(system.origin, `GET /v1/openapi.json HTTP/1.1\r\nHost: ${host}\r\n${headers}\r\n`, { localAddress })).status;
    // Before, such a request held its address's lane (one turn here) until its request timeout: the others got 429.
    for (const [address, headers] of [['127.0.0.2', ''], ['127.0.0.3', 'X-Forwarded-For: 198.51.100.1\r\n']]) {
      const held = await hold(undefined, address, headers);
      try {
        for (let i = 0; i < 50 && !held.answered(); i++) await sleep(100);
        expect({ address, answered: held.answered(), next: await status(address, headers) }).toEqual({ address, answered: true, next: 200 });
      } finally {
        held.socket.destroy();
      }
    }
  });

  it("keeps a request's turn until the api has finished it, when its client has gone away: abandoned requests cannot take the Postgres pool", async () => {
    const a = createUser(system);
    const b = createUser(system);
    const origin = new URL(system.baseUrl).origin;
    const pg = new Client({ connectionString: system.databaseUrl });
    await pg.connect();
    // Creates of A's webhooks wait in Postgres (each holding a pool connection) while this lock is held.
    await pg.query('select pg_advisory_lock(hashtext($1))', [`quota:webhooks:${a.id}`]);
    // This system's database only: pg_locks is the whole server's, where other tests' systems take advisory locks too.
    const waiting = async (): Promise<number> =>
      (await pg.query(`select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())`)).rows[0].n;
    const answers: (number | string)[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const ctl = new AbortController();
        const sent = fetch(`${origin}/v1/webhooks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ url: 'https://example.com/abandoned' }),
          signal: ctl.signal,
        }).then(
          (r) => r.status,
          () => 'abandoned',
        );
        // Answered at once (the key's turn is taken), or waiting for the lock in Postgres: then its client goes away.
        let answer: number | string | undefined;
        for (let t = 0; t < 200 && answer === undefined && (await waiting()) <= i; t++) answer = await Promise.race([sent, sleep(50).then(() => undefined)]);
        if (answer === undefined) {
          ctl.abort();
          answer = await sent;
        }
        answers.push(answer);
      }
      expect(answers).toEqual(['abandoned', 429, 429]);
      expect((await fetch(`${origin}/v1/users/me`, { headers: { authorization: `Bearer ${b.apiKey}` } })).status).toBe(200);
    } finally {
      await pg.query('select pg_advisory_unlock_all()');
      await pg.end();
    }
    // Once the abandoned request is done, A has its turn again.
    const me = () => fetch(`${origin}/v1/users/me`, { headers: { authorization: `Bearer ${a.apiKey}` } });
    for (let i = 0; i < 50 && (await me()).status !== 200; i++) await sleep(100);
    expect((await me()).status).toBe(200);
  });
});
