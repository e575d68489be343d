import { createServer, Server, ServerResponse } from 'node:http';
import { Client } from 'pg';
import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * One account's workflow sends never hold every other account's: an account performs SENDS_IN_FLIGHT_PER_ACCOUNT
 * sends at once (its next ones wait in Postgres), and a failed send's retry waits in Postgres too, not among the
 * SENDS consumer's unacknowledged messages, which one account's failing sends filled for everybody.
 */
const SENDS = (count: number) => `export default defineComponent({
  async run({ steps, $ }) {
    for (let i = 0; i < ${count}; i++) $.send.http({ method: "POST", url: steps.trigger.event.url, data: { i } });
  },
});`;

describe('workflow sends: one account against the others', () => {
  let system: System;
  let silent: Server;
  let failing: Server;
  let healthy: Server;
  const held: ServerResponse[] = [];
  let silentNow = 0;
  let silentMax = 0;
  let failed = 0;
  const arrived: string[] = [];
  const urls = { silent: '', failing: '', healthy: '' };

  const listen = async (srv: Server): Promise<string> => {
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(srv.address() as { port: number }).port}/in`;
  };
  const workflow = async (apiKey: string, name: string, count: number): Promise<string> => {
    const res = await client(system, apiKey).post('/workflows', { name, trigger: { manual: {} }, steps: [{ name: 'send', code: SENDS(count) }] });
    expect(res.status).toBe(200);
    return res.body.data.id;
  };
  const run = async (apiKey: string, id: string, url: string): Promise<void> => {
    expect((await client(system, apiKey).post(`/workflows/${id}/run`, { event: { url } })).status).toBe(202);
  };

  beforeAll(async () => {
    // Takes every request and never answers it.
    silent = createServer((req, res) => {
      silentMax = Math.max(silentMax, ++silentNow);
      req.on('close', () => silentNow--);
      held.push(res);
    });
    failing = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        failed++;
        res.writeHead(500).end();
      });
    });
    healthy = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        arrived.push(body);
        res.writeHead(200).end();
      });
    });
    [urls.silent, urls.failing, urls.healthy] = await Promise.all([listen(silent), listen(failing), listen(healthy)]);
    // A silent receiver holds an attempt for a minute; a failed attempt's retry is an hour away.
    system = await startSystem({ SEND_TIMEOUT_MS: '60000', WEBHOOK_RETRY_SCHEDULE: '1h' });
  });
  afterAll(async () => {
    await system?.stop();
    held.forEach((res) => res.destroy());
    await Promise.all([silent, failing, healthy].map((s) => new Promise((r) => s?.close(r))));
  });

  it("performs at most SENDS_IN_FLIGHT_PER_ACCOUNT of an account's sends at once: another account's send is not held behind its silent receiver", async () => {
    const a = createUser(system);
    const b = createUser(system);
    await run(a.apiKey, await workflow(a.apiKey, 'flood', 40), urls.silent);
    await eventually(async () => silentNow >= 8, { what: "the first account's sends waiting on the silent receiver" });
    await run(b.apiKey, await workflow(b.apiKey, 'one', 1), urls.healthy);
    await eventually(async () => arrived.length === 1, { what: "the other account's send", timeoutMs: 30_000 });
    expect(JSON.parse(arrived[0])).toEqual({ i: 0 });
    expect(silentMax).toBe(8);
  });

  it("keeps failed sends' retries out of the consumer: an account's 1,200 failing sends do not stop another account's", async () => {
    const a = createUser(system);
    const b = createUser(system);
    const flood = await workflow(a.apiKey, 'failing', 400);
    for (let n = 0; n < 3; n++) await run(a.apiKey, flood, urls.failing);
    await eventually(async () => failed >= 1200, { what: "every failing send's first attempt", timeoutMs: 60_000 });
    await run(b.apiKey, await workflow(b.apiKey, 'after', 1), urls.healthy);
    await eventually(async () => arrived.length === 2, { what: "the other account's send after the failures", timeoutMs: 30_000 });

    // Each failed send waits for its second attempt in Postgres, once.
    const db = new Client({ connectionString: system.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query(`select attempt, count(*)::int as n from send_retries where owner_id = $1 group by attempt`, [a.id]);
      expect(rows).toEqual([{ attempt: 2, n: 1200 }]);
    } finally {
      await db.end();
    }
    expect(failed).toBe(1200);
  });
});
