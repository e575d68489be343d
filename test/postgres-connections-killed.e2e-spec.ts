import { Client } from 'pg';
import { client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { firstDelivered, httpSourceToWebhook, Receiver } from './events.helpers';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** What a client saw: every status, and each 5xx that is not a 503 with Retry-After in the error shape. */
class Tally {
  readonly statuses: Record<string, Record<number, number>> = {};
  readonly wrong: string[] = [];

  note(kind: string, status: number, text: string, retryAfter: string | null): void {
    (this.statuses[kind] ??= {})[status] = (this.statuses[kind][status] ?? 0) + 1;
    if (status < 500) return;
    let shaped = false;
    try {
      const body = JSON.parse(text) as { error?: unknown; code?: unknown; details?: { retry_after_seconds?: unknown } };
      shaped = typeof body.error === 'string' && body.code === 'unavailable' && body.details?.retry_after_seconds === Number(retryAfter);
    } catch {
      shaped = false;
    }
    if (status !== 503 || !shaped || !retryAfter) this.wrong.push(`${kind}: ${status} retry-after=${retryAfter} ${text.slice(0, 200)}`);
  }

  count(status: number): number {
    return Object.values(this.statuses).reduce((n, s) => n + (s[status] ?? 0), 0);
  }
}

/**
 * An operator (or a failover, a pooler, an idle timeout) terminates the service's Postgres connections
 * while api and delivery are busy: REST calls, HTTP ingress and webhook deliveries. Requests whose
 * connection died answer 503 with Retry-After in the error shape (they answered a bare 500 before),
 * the pools open new connections by themselves, and every event accepted with 200 is delivered.
 */
describe('Postgres connections terminated under load', () => {
  let system: System;
  let receiver: Receiver;

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', DELIVERY_METRICS_PORT: String(await freePort()), REGISTRY_DIR: 'off' });
    receiver = await new Receiver().start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await system?.stop();
  });

  it('answers 503 with Retry-After while connections die, recovers without a restart, and delivers every accepted event', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const { src, url, wh } = await httpSourceToWebhook(system, api, receiver.url);
    await firstDelivered(url, receiver);

    const tally = new Tally();
    const accepted: number[] = [];
    let stop = false;
    let next = 0;
    const ingress = async (): Promise<void> => {
      while (!stop) {
        const i = next++;
        const res = await fetch(url, { method: 'POST', body: JSON.stringify({ i }), headers: { 'content-type': 'application/json' } });
        tally.note('ingress', res.status, await res.text(), res.headers.get('retry-after'));
        if (res.ok) accepted.push(i);
        await sleep(20);
      }
    };
    const rest = async (kind: string, call: () => ReturnType<typeof api.get>): Promise<void> => {
      while (!stop) {
        const res = await call();
        tally.note(kind, res.status, res.text, res.headers.get('retry-after'));
        await sleep(10);
      }
    };
    const load = [
      ingress(),
      ingress(),
      rest('me', () => api.get('/users/me')),
      rest('sources', () => api.get('/users/me/sources?limit=100')),
      rest('summaries', () => api.get(`/sources/${src}/event_summaries?limit=50`)),
      rest('subscribe', () => api.post('/subscriptions', { emitter_id: src, listener_id: wh })),
      rest('webhooks', () => api.get('/users/me/webhooks')),
    ];

    // Only this system's own database: the server is shared.
    const dbName = new URL(system.databaseUrl).pathname.slice(1);
    const killer = new Client({ connectionString: system.databaseUrl });
    await killer.connect();
    let killed = 0;
    try {
      for (let round = 0; round < 20; round++) {
        await sleep(250);
        const { rows } = await killer.query<{ t: boolean }>(`select pg_terminate_backend(pid) as t from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()`, [dbName]);
        killed += rows.filter((r) => r.t).length;
      }
    } finally {
      await killer.end();
    }
    stop = true;
    await Promise.all(load);

    expect(killed).toBeGreaterThan(0);
    expect(tally.wrong).toEqual([]);
    // Some requests did lose their connection (the check above is not vacuous).
    expect(tally.count(503)).toBeGreaterThan(0);

    // No restart: every app still runs, and the api answers again.
    for (const [name, proc] of system.procs) expect({ name, exit: proc.exitCode ?? proc.signalCode }).toEqual({ name, exit: null });
    for (const path of ['/users/me', '/users/me/sources', `/sources/${src}/event_summaries`, '/users/me/webhooks']) {
      await eventually(async () => (await api.get(path)).status === 200, { what: `GET ${path} answered 200 again`, timeoutMs: 10_000 });
    }

    // Every request answered 200 was stored, run and delivered.
    const wanted = new Set(accepted);
    await eventually(
      async () => {
        const got = new Set(receiver.received.map((r) => (JSON.parse(r.body) as { i?: number } | null)?.i));
        return [...wanted].every((i) => got.has(i));
      },
      { what: `all ${wanted.size} accepted events delivered`, timeoutMs: 90_000, intervalMs: 1000 },
    );
  });
});
