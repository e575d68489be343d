import { createServer, connect, type Server, type Socket } from 'node:net';
import { Client } from 'pg';
import { newId } from '@app/contracts';
import { client, createUser } from './support/accounts';
import { AppName, startSystem, System } from './support/system';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A webhook of `ownerId` with `rows` logged delivery attempts: counting them is a slow statement a client can start at will. */
async function webhookWithLongLog(system: System, ownerId: string, rows: number): Promise<string> {
  const id = newId('webhook');
  const c = new Client({ connectionString: system.databaseUrl });
  await c.connect();
  try {
    const now = Date.now();
    await c.query(`insert into webhooks (id, owner_id, user_id, url, active, secret, created_at_ms, created_at, updated_at) values ($1, $2, $2, 'https://hooks.example.com/x', true, '{}', $3, $4, $4)`, [
      id,
      ownerId,
      now,
      Math.floor(now / 1000),
    ]);
    await c.query(
      `insert into webhook_deliveries (id, webhook_id, event_id, emitter_id, attempt, status, created_at_ms)
       select $1 || g, $2, 'e' || g, 'dc_x', 1, 'failed', $3::bigint + g from generate_series(1, $4::int) g`,
      [`${id}_`, id, now - rows, rows],
    );
    await c.query('analyze webhook_deliveries');
  } finally {
    await c.end();
  }
  return id;
}

interface Answer {
  status: number;
  body: { error?: unknown; code?: unknown; details?: Record<string, unknown> } | undefined;
  headers: Headers;
}

/** Every 5xx of `answers` that is not a 503 with Retry-After in the error shape. */
const wrong = (answers: Answer[]): Answer[] =>
  answers.filter(
    (a) => a.status >= 500 && !(a.status === 503 && a.body?.code === 'unavailable' && typeof a.body.error === 'string' && a.headers.get('retry-after') === String(a.body.details?.retry_after_seconds)),
  );

/**
 * One account's requests can hold every connection of the api's Postgres pool (many at once, or slow
 * statements). A request that gets no connection within DB_POOL_ACQUIRE_TIMEOUT_MS, or whose statement
 * runs past DB_STATEMENT_TIMEOUT_MS, answers 503 with Retry-After (knex's own 60 s wait and a 500 before);
 * and with API_MAX_CONCURRENT_PER_KEY, one key's burst waits behind itself, so another account is still
 * answered.
 */
describe('the api under a saturated Postgres pool', () => {
  const systems: System[] = [];
  const start = async (env: Record<string, string>, apps: AppName[] = ['api']): Promise<System> => {
    const s = await startSystem({ REGISTRY_DIR: 'off', ...env }, { apps });
    systems.push(s);
    return s;
  };
  afterAll(async () => {
    for (const s of systems) await s.stop();
  });

  it('answers 503 with Retry-After when no connection is free within DB_POOL_ACQUIRE_TIMEOUT_MS', async () => {
    const system = await start({ DB_POOL_MAX: '1', DB_POOL_ACQUIRE_TIMEOUT_MS: '100', API_MAX_CONCURRENT_PER_KEY: '0' });
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const wh = await webhookWithLongLog(system, user.id, 300_000);
    // Each page counts 300,000 rows on the one connection: the others wait longer than 100 ms.
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 3 ? api.get(`/webhooks/${wh}/deliveries`) : api.get('/users/me/sources?limit=100'))));
    expect(wrong(answers)).toEqual([]);
    const busy = answers.filter((a) => a.status === 503);
    expect(busy.length).toBeGreaterThan(0);
    expect(busy[0].body).toEqual({ error: expect.stringContaining('retry later'), code: 'unavailable', details: { retry_after_seconds: 2 } });
    expect(answers.every((a) => a.status === 200 || a.status === 503)).toBe(true);
    // The pool is not wedged: alone, the same requests succeed.
    expect((await api.get(`/webhooks/${wh}/deliveries`)).status).toBe(200);
  });

  it('answers 503 with Retry-After when a statement runs past DB_STATEMENT_TIMEOUT_MS', async () => {
    const system = await start({ DB_STATEMENT_TIMEOUT_MS: '5' });
    const user = createUser(system);
    const wh = await webhookWithLongLog(system, user.id, 300_000);
    const res = await client(system, user.apiKey).get(`/webhooks/${wh}/deliveries`);
    expect({ status: res.status, body: res.body, retryAfter: res.headers.get('retry-after') }).toEqual({
      status: 503,
      body: { error: expect.stringContaining('retry later'), code: 'unavailable', details: { retry_after_seconds: 2 } },
      retryAfter: '2',
    });
  });

  it('starts when its first Postgres connections take longer than DB_POOL_ACQUIRE_TIMEOUT_MS, and answers once they come', async () => {
    const system = await start({}, []);
    const target = new URL(system.databaseUrl);
    // Between the api and Postgres: the first 3 connections wait 600 ms before they are passed on (a loaded machine).
    let slow = 3;
    const open = new Set<Socket>();
    const proxy: Server = createServer((inbound) => {
      open.add(inbound);
      const delay = slow-- > 0 ? 600 : 0;
      setTimeout(() => {
        const outbound = connect(Number(target.port || 5432), target.hostname);
        open.add(outbound);
        inbound.pipe(outbound).pipe(inbound);
        const close = (): void => (inbound.destroy(), void outbound.destroy());
        inbound.on('error', close).on('close', close);
        outbound.on('error', close).on('close', close);
      }, delay);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const proxied = new URL(system.databaseUrl);
      proxied.host = `127.0.0.1:${(proxy.address() as { port: number }).port}`;
      // Before: MikroORM's database check ran under the 100 ms bound and the api exited at its start.
      await system.startApp('api', 'api', { DATABASE_URL: proxied.toString(), DB_POOL_MAX: '1', DB_POOL_ACQUIRE_TIMEOUT_MS: '100' });
      const user = createUser(system);
      const api = client(system, user.apiKey);
      const answers: Answer[] = [];
      for (let i = 0; i < 40 && answers.at(-1)?.status !== 200; i++) {
        answers.push(await api.get('/users/me'));
        if (answers.at(-1)?.status !== 200) await sleep(250);
      }
      expect(wrong(answers)).toEqual([]);
      expect(answers.at(-1)?.status).toBe(200);
    } finally {
      await system.stopApp('api');
      for (const socket of open) socket.destroy();
      await new Promise((r) => proxy.close(r));
    }
  });

  it("keeps answering another account while one key floods the api with slow requests", async () => {
    const system = await start({ DB_POOL_MAX: '2', DB_POOL_ACQUIRE_TIMEOUT_MS: '300', API_MAX_CONCURRENT_PER_KEY: '1', API_QUEUE_WAIT_MS: '60000' });
    const a = createUser(system);
    const b = createUser(system);
    const apiA = client(system, a.apiKey);
    const apiB = client(system, b.apiKey);
    const wh = await webhookWithLongLog(system, a.id, 300_000);
    let stop = false;
    const flooded: Answer[] = [];
    const flood = async (): Promise<void> => {
      while (!stop) flooded.push(await apiA.get(`/webhooks/${wh}/deliveries`));
    };
    const floods = Array.from({ length: 20 }, () => flood());
    await sleep(500);
    const other: Answer[] = [];
    for (let i = 0; i < 20; i++) {
      other.push(await apiB.get(i % 2 ? '/users/me' : '/users/me/sources'));
      await sleep(100);
    }
    stop = true;
    await Promise.all(floods);
    expect(wrong([...flooded, ...other])).toEqual([]);
    expect(other.map((r) => r.status)).toEqual(other.map(() => 200));
    // The flooding key got its answers too, one at a time.
    expect(flooded.filter((r) => r.status === 200).length).toBeGreaterThan(0);
  });
});
