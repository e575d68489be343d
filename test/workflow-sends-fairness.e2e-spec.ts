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

  it("takes due sends fairly across accounts: another account's one due send goes out in the same round as the first of an account's 3,000", async () => {
    const a = createUser(system);
    const b = createUser(system);
    const wfB = await workflow(b.apiKey, 'fair', 1);
    const db = new Client({ connectionString: system.databaseUrl });
    await db.connect();
    try {
      // Which transaction deleted each waiting send: a poll republishes and deletes one round of due rows in one.
      await db.query(`create table test_send_rounds (seq serial, owner_id text, tx bigint)`);
      await db.query(`create function test_send_round() returns trigger language plpgsql security definer as $$
        begin insert into test_send_rounds (owner_id, tx) values (old.owner_id, txid_current()); return old; end $$`);
      await db.query(`create trigger test_send_round after delete on send_retries for each row execute function test_send_round()`);
      const row = (owner: string, workflowId: string, invocation: string, url: string, dueAtMs: string) =>
        `select 'inv_${invocation}' || i || ':s0', '${owner}', 1, ${dueAtMs}, json_build_object('kind', 'http', 'ownerId', '${owner}', 'workflowId', '${workflowId}',
           'invocationId', 'inv_${invocation}' || i, 'index', 0, 'createdAtMs', $1::bigint, 'payload', json_build_object('url', '${url}', 'data', json_build_object('owner', '${owner}'))), $1::bigint`;
      // A's 3,000 sends (of a workflow that is gone: each is dropped once republished) all came due before B's one.
      await db.query(
        `insert into send_retries (id, owner_id, attempt, due_at_ms, message, created_at_ms)
         ${row(a.id, 'p_goneeeeeeeeeeeeeeeeee', 'fair_a_', urls.healthy, '$1::bigint - 600000 + i')} from generate_series(1, 3000) i
         union all ${row(b.id, wfB, 'fair_b_', urls.healthy, '$1::bigint - 1000')} from generate_series(1, 1) i`,
        [Date.now()],
      );
      await eventually(async () => arrived.some((body) => body.includes(b.id)), { what: "B's due send", timeoutMs: 30_000 });
      const rounds = (await db.query(`select owner_id, min(seq) as first, min(tx)::text as tx from test_send_rounds where owner_id in ($1, $2) group by owner_id`, [a.id, b.id])).rows;
      const [roundA, roundB] = [a.id, b.id].map((id) => rounds.find((r) => r.owner_id === id)?.tx);
      expect(roundB).toBeDefined();
      expect(roundB).toBe(roundA);
      expect(arrived.filter((body) => body.includes(a.id))).toEqual([]);
    } finally {
      await db.query(`drop trigger if exists test_send_round on send_retries`).catch(() => undefined);
      await db.end();
    }
  });
});
