import { connect as tcp, Socket } from 'node:net';
import { connect, NatsConnection } from 'nats';
import { natsAdmin } from './support/env';
import { decodeJson, InvocationMessage, Names, partitionOf } from '@app/contracts';
import { client, createUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { eventually, startSystem, System } from './support/system';

/**
 * `count` POSTs of `{ n }`, each on a connection of its own: every request but its last byte is written first, then
 * the last bytes all at once, so that the api finds the requests complete together and reads them in one turn of its
 * event loop. The statuses of the answers, in request order.
 */
async function together(url: string, count: number): Promise<number[]> {
  const u = new URL(url);
  const sockets = await Promise.all(
    Array.from({ length: count }, () => new Promise<Socket>((resolve, reject) => {
      const socket = tcp(Number(u.port), u.hostname, () => resolve(socket));
      socket.on('error', reject);
    })),
  );
  const answers = sockets.map((socket) => new Promise<number>((resolve) => {
    let text = '';
    socket.on('data', (d) => {
      text += d.toString('utf8');
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (status && text.includes('\r\n\r\n')) {
        socket.destroy();
        resolve(Number(status[1]));
      }
    });
    socket.on('close', () => resolve(0));
  }));
  const requests = sockets.map((_, n) => {
    const body = JSON.stringify({ n });
    return `POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  });
  sockets.forEach((socket, n) => socket.write(requests[n].slice(0, -1)));
  await new Promise((r) => setTimeout(r, 200));
  sockets.forEach((socket, n) => socket.write(requests[n].slice(-1)));
  return Promise.all(answers);
}

const REQUESTS = 40;

/**
 * The requests to one source that arrive in one turn of the api's event loop are stored as one INVOCATIONS message;
 * each request is still its own invocation, run and counted once, and the ingest bound counts requests, not messages.
 */
describe('HTTP ingress: requests stored together', () => {
  let system: System;
  let nc: NatsConnection;

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', INGEST_MAX_PENDING_PER_SOURCE: '10', INGEST_BACKLOG_POLL_MS: '50' }, { apps: ['api', 'delivery'] });
    nc = await connect(natsAdmin());
  });
  afterAll(async () => {
    await nc?.close();
    await system?.stop();
  });

  it('stores a turn of requests as one message, counts each in the ingest bound, and runs each once', async () => {
    const api = client(system, createUser(system).apiKey);
    const created = await api.post('/sources', { component_code: HTTP_SOURCE, name: 'batched' });
    expect(created.status).toBe(200);
    const { id } = created.body.data;
    const url: string = created.body.data.configured_props.http.endpoint_url;

    expect(await together(url, REQUESTS)).toEqual(Array(REQUESTS).fill(200));

    // Fewer messages than requests; together they hold every request once, each an invocation of its own.
    const names = new Names(system.natsPrefix);
    const subject = names.invocation(partitionOf(id, Number(system.env.PARTITIONS)), id);
    const jsm = await nc.jetstreamManager();
    const info = await jsm.streams.info(names.invocationsStream, { subjects_filter: subject });
    const messages = info.state.subjects?.[subject] ?? 0;
    expect(messages).toBeGreaterThan(0);
    expect(messages).toBeLessThan(REQUESTS);
    const stored: InvocationMessage[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(names.invocationsStream, { seq }).catch(() => undefined);
      if (m?.subject !== subject) continue;
      const decoded = decodeJson<InvocationMessage | InvocationMessage[]>(m.data);
      stored.push(...(Array.isArray(decoded) ? decoded : [decoded]));
    }
    expect(stored.map((inv) => (inv.event as { body: { n: number } }).body.n).sort((a, b) => a - b)).toEqual([...Array(REQUESTS).keys()]);
    expect(new Set(stored.map((inv) => inv.invocationId)).size).toBe(REQUESTS);
    expect(stored.every((inv) => inv.sourceId === id && inv.kind === 'http')).toBe(true);

    // The bound (10) counts the requests waiting, not the messages holding them.
    await eventually(async () => ((await (await fetch(`${system.origin}/healthz`)).json()) as { ingest: { invocations_pending: number } }).ingest.invocations_pending >= 10, { what: 'the backlog read' });
    const refused = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":99}' });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ code: 'backlog_full', details: { scope: 'source', limit: 10 } });

    // A runner runs every request once: an event per request.
    await system.startApp('runner', 'runner');
    const events = await eventually(async () => {
      const res = await api.get(`/sources/${id}/event_summaries?limit=100&expand=event`);
      return res.body.data.length >= REQUESTS ? res.body.data : undefined;
    }, { what: 'an event per request', timeoutMs: 60_000 });
    await new Promise((r) => setTimeout(r, 1000));
    const again = (await api.get(`/sources/${id}/event_summaries?limit=100&expand=event`)).body.data as { event: { n: number } }[];
    expect(again.length).toBe(events.length);
    expect(again.map((e) => e.event.n).sort((a, b) => a - b)).toEqual([...Array(REQUESTS).keys()]);
  }, 120_000);
});
