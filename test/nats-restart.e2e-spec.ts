import { connect } from 'nats';
import { decodeJson, DesiredSourceState, Names, partitionOf } from '@app/contracts';
import { client, createUser } from './support/accounts';
import { OwnNats, startOwnNats } from './support/own-nats';
import { eventually, freePort, startSystem, System } from './support/system';
import { firstDelivered, httpSourceToWebhook, Receiver, sql } from './events.helpers';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The ids an SSE stream delivered, and whether it ended. */
function readStream(res: Response): { ids: string[]; ended: Promise<void> } {
  const ids: string[] = [];
  const ended = (async () => {
    const reader = res.body!.getReader();
    let buf = '';
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      buf += Buffer.from(value!).toString('utf8');
      const blocks = buf.split('\n\n');
      buf = blocks.pop() ?? '';
      for (const b of blocks) {
        const id = /^id: (\S+)$/m.exec(b)?.[1];
        if (id) ids.push(id);
      }
    }
  })();
  return { ids, ended };
}

/**
 * The installation's only nats-server crashes (`kill -9`) under load and is started again a few seconds
 * later on the same JetStream store. Meanwhile the api answers what needs NATS with 503 and Retry-After
 * at once (a manual run and a new event stream answered a bare 500 after a 5 s timeout before) and what
 * needs only Postgres as usual; a source update made meanwhile reaches NATS through the reconciler. Once
 * NATS is back, api, runner and delivery carry on without a restart, and every event accepted with 200 is
 * delivered.
 */
describe('the NATS server restarting under load', () => {
  let nats: OwnNats;
  let system: System;
  let receiver: Receiver;

  beforeAll(async () => {
    nats = await startOwnNats();
    system = await startSystem(
      { HTTP_RATE_PER_SEC: '0', RUNNER_METRICS_PORT: String(await freePort()), DELIVERY_METRICS_PORT: String(await freePort()), REGISTRY_DIR: 'off', RECONCILE_INTERVAL_MS: '500' },
      { ownNats: nats },
    );
    receiver = await new Receiver().start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await system?.stop();
    await nats?.remove();
  });

  it('answers 503 while NATS is down and loses nothing accepted once it is back', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const { src, componentId, url } = await httpSourceToWebhook(system, api, receiver.url);
    const send = (i: number): Promise<Response> => fetch(url, { method: 'POST', body: JSON.stringify({ i }), headers: { 'content-type': 'application/json' } });
    await firstDelivered(url, receiver);
    const streams = new AbortController();
    const openStream = (): Promise<Response> => fetch(`${system.origin}/sse/dc/${src}/emits`, { headers: { authorization: `Bearer ${user.apiKey}` }, signal: streams.signal });
    const stream = readStream(await openStream());

    // Load throughout: requests to the source's endpoint.
    const accepted: number[] = [];
    const refused: { status: number; body: unknown; retryAfter: string | null }[] = [];
    let stop = false;
    let next = 0;
    const sender = async (): Promise<void> => {
      while (!stop) {
        const i = next++;
        const res = await send(i);
        const body = await res.json().catch(() => undefined);
        if (res.status === 200) accepted.push(i);
        else refused.push({ status: res.status, body, retryAfter: res.headers.get('retry-after') });
        await sleep(20);
      }
    };
    // Several senders: one that is waiting for JetStream's acknowledgement when the server dies does not stop the others.
    const load = Promise.all([sender(), sender(), sender()]);
    await sleep(1000);

    await nats.stop('SIGKILL');
    const unavailable = { error: expect.stringContaining('NATS'), code: 'unavailable', details: { retry_after_seconds: 1 } };
    // Once the api has seen the connection drop (and it did not come back within a second), requests that need NATS are refused.
    const run = await eventually(async () => {
      const r = await api.post(`/sources/${src}/run`, { event: { manual: true } });
      return r.status === 503 ? r : undefined;
    }, { what: 'a manual run refused while NATS is down', timeoutMs: 15_000, intervalMs: 200 });
    expect({ body: run.body, retryAfter: run.headers.get('retry-after') }).toEqual({ body: unavailable, retryAfter: '1' });
    const newStream = await openStream();
    expect({ status: newStream.status, body: await newStream.json(), retryAfter: newStream.headers.get('retry-after') }).toEqual({ status: 503, body: unavailable, retryAfter: '1' });
    const ingress = await send(-2);
    expect({ status: ingress.status, body: await ingress.json() }).toEqual({ status: 503, body: { error: expect.stringContaining('not stored'), code: 'unavailable', details: { retry_after_seconds: 1 } } });
    // What needs only Postgres is answered; a change is kept there and published once NATS is back.
    expect((await api.get('/users/me')).status).toBe(200);
    const renamed = await api.put(`/sources/${src}`, { component_id: componentId, name: 'renamed while NATS was down' });
    expect(renamed.status).toBe(200);
    await sleep(3000);

    await nats.start();
    await eventually(async () => (await api.post(`/sources/${src}/run`, { event: { manual: true } })).status === 202, { what: 'manual runs accepted again', timeoutMs: 30_000, intervalMs: 500 });
    await eventually(async () => (await send(-3)).status === 200, { what: 'the endpoint accepting requests again', timeoutMs: 30_000, intervalMs: 500 });
    await sleep(3000);
    stop = true;
    await load;

    // Refusals were 503s with Retry-After in the error shape; no other error.
    for (const r of refused) expect(r).toEqual({ status: 503, body: { error: expect.any(String), code: 'unavailable', details: expect.objectContaining({ retry_after_seconds: 1 }) }, retryAfter: '1' });

    // Every app carried on by itself.
    for (const [name, proc] of system.procs) expect({ name, exit: proc.exitCode ?? proc.signalCode }).toEqual({ name, exit: null });
    const runnerHealth = `http://127.0.0.1:${system.env.RUNNER_METRICS_PORT}/healthz`;
    await eventually(async () => ((await (await fetch(runnerHealth)).json()) as { partitions: number[] }).partitions.length === Number(system.env.PARTITIONS), {
      what: 'the runner holding every partition again',
      timeoutMs: 30_000,
    });

    // Nothing accepted is lost.
    const wanted = new Set(accepted);
    await eventually(
      async () => {
        const got = new Set(receiver.received.map((r) => (JSON.parse(r.body) as { i?: number } | null)?.i));
        return [...wanted].every((i) => got.has(i));
      },
      { what: `all ${wanted.size} accepted events delivered`, timeoutMs: 90_000, intervalMs: 1000 },
    );

    // The update made while NATS was down reached the runner's desired state.
    const [{ rev }] = await sql<{ rev: number }>(system, 'select rev from sources where id = $1', [src]);
    const nc = await connect(nats.admin);
    try {
      const names = new Names(nats.prefix);
      const kv = await nc.jetstream().views.kv(names.sourcesBucket);
      await eventually(async () => {
        const entry = await kv.get(names.sourceKey(partitionOf(src, Number(system.env.PARTITIONS)), src));
        return entry && decodeJson<DesiredSourceState>(entry.value).rev === Number(rev);
      }, { what: 'the desired state of the update published', timeoutMs: 20_000, intervalMs: 250 });
    } finally {
      await nc.close();
    }

    // The stream opened before the crash either goes on (it resumes where it was: no event twice, in order) or has ended cleanly.
    const last = String(receiver.received[receiver.received.length - 1].headers['webhook-id']);
    const resumed = await Promise.race([eventually(async () => stream.ids.includes(last), { what: 'the stream to resume', timeoutMs: 15_000 }).then(() => true), stream.ended.then(() => false)]);
    expect(new Set(stream.ids).size).toBe(stream.ids.length);
    if (resumed) expect([...stream.ids].sort((a, b) => compareIds(a, b))).toEqual(stream.ids);
    streams.abort();
  }, 240_000);
});

function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number);
  const [bm, bs] = b.split('-').map(Number);
  return am - bm || as - bs;
}
