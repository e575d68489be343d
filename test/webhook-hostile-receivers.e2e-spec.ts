import { createServer as createTcpServer, Server as TcpServer, Socket } from 'node:net';
import { AddressInfo } from 'node:net';
import { Webhook as Verifier } from 'standardwebhooks';
import { client, createUser, TestUser } from './support/accounts';
import { InternalServer } from './support/internal-server';
import { eventually, freePort, startSystem, System } from './support/system';
import { Emitter, insertSource, Receiver, subscriptionsLoaded } from './events.helpers';

type Log = Array<{ status: string; response_code: number | null; response_body: string | null; error: string | null }>;

/** A webhook of `user` to `url` subscribed to `src`; returns its id and secret. */
async function hook(system: System, user: TestUser, src: string, url: string): Promise<{ id: string; secret: string }> {
  const api = client(system, user.apiKey);
  const created = await api.post('/webhooks', { url });
  expect({ url, status: created.status }).toEqual({ url, status: 200 });
  expect((await api.post('/subscriptions', { emitter_id: src, listener_id: created.body.data.id })).status).toBe(200);
  return { id: created.body.data.id, secret: created.body.data.secret };
}

const logOf = async (system: System, user: TestUser, wh: string): Promise<Log> => (await client(system, user.apiKey).get(`/webhooks/${wh}/deliveries?limit=100`)).body.data;

describe('webhook URLs that spell a loopback address another way (ALLOW_LOOPBACK=false)', () => {
  let system: System;
  let emitter: Emitter;
  let internal: InternalServer;

  beforeAll(async () => {
    // Dual-stack on every address: it answers 127.0.0.1, ::1 and this machine's interfaces alike.
    internal = await new InternalServer('internal secret').start('::');
    system = await startSystem({ ALLOW_LOOPBACK: 'false', WEBHOOK_RETRY_SCHEDULE: '100ms', DELIVERY_METRICS_PORT: String(await freePort()) }, { apps: ['api', 'delivery'] });
    emitter = await Emitter.connect(system);
  });
  afterAll(async () => {
    await emitter?.close();
    await system?.stop();
    await internal?.stop();
  });

  it('refuses every spelling before connecting: nothing reaches the internal service or the delivery log', async () => {
    const port = internal.port;
    const hosts = ['localhost', 'localhost.', '[::1]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[0:0:0:0:0:ffff:127.0.0.1]', '[::127.0.0.1]', '[64:ff9b::127.0.0.1]',
      '2130706433', '0177.0.0.1', '0x7f.1', '127.1', '127.0.0.1.', 'user:pass@127.0.0.1', '%31%32%37.0.0.1', 'LOCALHOST'];
    const user = createUser(system);
    const src = await insertSource(system, user.id);
    // The unspecified address, which reaches this machine, is never delivered to: refused when the webhook is made.
    for (const host of ['0.0.0.0', '0', '[::]', '[::ffff:0.0.0.0]']) {
      const created = await client(system, user.apiKey).post('/webhooks', { url: `http://${host}:${port}/probe` });
      expect({ host, status: created.status, details: created.body.details }).toEqual({ host, status: 400, details: { field: 'url', reason: 'blocked' } });
    }
    const hooks = [];
    for (const host of hosts) hooks.push({ host, ...(await hook(system, user, src, `http://${host}:${port}/probe`)) });
    await subscriptionsLoaded(system);
    await emitter.emit(src, user.id, { probe: true });
    for (const h of hooks) {
      const log = await eventually(async () => {
        const d = await logOf(system, user, h.id);
        return d.some((x) => x.status === 'exhausted') ? d : undefined;
      }, { what: `attempts to ${h.host} exhausted` });
      expect({ host: h.host, answered: log.filter((x) => x.response_code !== null || x.response_body) }).toEqual({ host: h.host, answered: [] });
      expect({ host: h.host, errors: log.filter((x) => !/refused to connect|ENOTFOUND|EAI_AGAIN|ENODATA/.test(x.error ?? '')).map((x) => x.error) }).toEqual({ host: h.host, errors: [] });
    }
    expect(internal.hits).toEqual([]);
  });
  it("names the host of a refused name, never the address the platform's resolver gave for it (internal DNS stays unread)", async () => {
    const port = internal.port;
    const user = createUser(system);
    const src = await insertSource(system, user.id);
    const wh = await hook(system, user, src, `http://localhost:${port}/probe`);
    await subscriptionsLoaded(system);
    await emitter.emit(src, user.id, { probe: true });
    const log = await eventually(async () => {
      const d = await logOf(system, user, wh.id);
      return d.some((x) => x.status === 'exhausted') ? d : undefined;
    }, { what: 'attempts to localhost exhausted' });
    expect(log.map((x) => x.error)).toEqual(log.map(() => 'refused to connect to localhost: localhost is a loopback address (allowed only with ALLOW_LOOPBACK=true)'));
  });
});

/** A TCP server that answers every connection with `answer` (raw bytes, written as it likes). */
async function rawServer(answer: (socket: Socket) => void): Promise<{ server: TcpServer; url: string }> {
  const server = createTcpServer((socket) => {
    socket.on('error', () => undefined);
    socket.once('data', () => answer(socket));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` };
}

describe('receivers that misbehave (ALLOW_LOOPBACK=true)', () => {
  let system: System;
  let emitter: Emitter;
  const servers: TcpServer[] = [];
  const timers: NodeJS.Timeout[] = [];
  let healthy: Receiver;

  beforeAll(async () => {
    system = await startSystem({ WEBHOOK_RETRY_SCHEDULE: '100ms,100ms', WEBHOOK_TIMEOUT_MS: '1500', DELIVERY_METRICS_PORT: String(await freePort()) }, { apps: ['api', 'delivery'] });
    emitter = await Emitter.connect(system);
    healthy = await new Receiver().start();
  });
  afterAll(async () => {
    timers.forEach(clearInterval);
    await emitter?.close();
    await system?.stop();
    await healthy?.stop();
    for (const s of servers) await new Promise<void>((r) => s.close(() => r()));
  });

  const raw = async (answer: (socket: Socket) => void): Promise<string> => {
    const { server, url } = await rawServer(answer);
    servers.push(server);
    return url;
  };
  const forever = (socket: Socket, every: number, chunk: () => string | Buffer): void => {
    const t = setInterval(() => (socket.destroyed ? clearInterval(t) : socket.write(chunk())), every);
    timers.push(t);
  };

  it("byte-by-byte, endless, huge and invalid answers fail only their own webhook's attempts, with at most 1 KiB of body kept", async () => {
    const big = Buffer.alloc(1 << 20, 'x');
    const hostile: Record<string, string> = {
      slow: await raw((s) => {
        s.write('HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n');
        forever(s, 50, () => 'x');
      }),
      slowHeaders: await raw((s) => forever(s, 50, () => 'H')),
      endlessChunked: await raw((s) => {
        s.write('HTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\n\r\n');
        forever(s, 5, () => `${big.length.toString(16)}\r\n${big}\r\n`);
      }),
      twoGigabytes: await raw((s) => {
        s.write(`HTTP/1.1 500 Oops\r\nContent-Length: ${2 ** 31}\r\n\r\n`);
        forever(s, 5, () => big);
      }),
      hugeHeaders: await raw((s) => {
        s.write('HTTP/1.1 200 OK\r\n');
        forever(s, 5, () => `X-Pad: ${'y'.repeat(8000)}\r\n`);
      }),
      garbage: await raw((s) => s.end('NOT HTTP AT ALL\r\n\r\n')),
      badStatus: await raw((s) => s.end('HTTP/1.1 999999 Nope\r\nContent-Length: 0\r\n\r\n')),
      closes: await raw((s) => s.destroy()),
      nulBody: await raw((s) => s.end('HTTP/1.1 500 Oops\r\nContent-Length: 7\r\n\r\na\u0000b\u00ffc\r\n')),
    };
    const mallory = createUser(system);
    const victim = createUser(system);
    const mSrc = await insertSource(system, mallory.id);
    const vSrc = await insertSource(system, victim.id);
    const hooks: Record<string, string> = {};
    for (const [name, url] of Object.entries(hostile)) hooks[name] = (await hook(system, mallory, mSrc, url)).id;
    const vHook = await hook(system, victim, vSrc, healthy.url);
    await subscriptionsLoaded(system);
    for (let i = 0; i < 5; i++) await emitter.emit(mSrc, mallory.id, { i });
    // The victim's large, non-ASCII event verifies with the reference library.
    const data = { text: 'snow☃man é 😀 \u2028 '.repeat(20_000), n: 1 };
    const vEv = await emitter.emit(vSrc, victim.id, data);
    const got = await eventually(async () => healthy.received.find((r) => r.headers['webhook-id'] === vEv.id), { what: "the victim's delivery", timeoutMs: 30_000 });
    expect(new Verifier(vHook.secret).verify(got.body, got.headers as Record<string, string>)).toEqual(data);
    for (const [name, wh] of Object.entries(hooks)) {
      const log = await eventually(async () => {
        const d = await logOf(system, mallory, wh);
        return d.filter((x) => x.status === 'exhausted').length === 5 ? d : undefined;
      }, { what: `${name}'s attempts exhausted`, timeoutMs: 60_000 });
      expect({ name, long: log.filter((x) => Buffer.byteLength(x.response_body ?? '') > 1024 * 3) }).toEqual({ name, long: [] });
      expect({ name, ok: log.filter((x) => x.status === 'succeeded') }).toEqual({ name, ok: [] });
    }
    // The delivery app still answers.
    expect((await client(system, victim.apiKey).get(`/webhooks/${vHook.id}/deliveries`)).body.data[0]).toEqual(expect.objectContaining({ status: 'succeeded', response_code: 200 }));
  });

  it('every retry carries the same webhook-id and the same body, each signed so that the reference library verifies it', async () => {
    const r = await new Receiver().start();
    r.respond = (_req, n) => (n < 3 ? { status: 500, body: 'again' } : { status: 200, body: 'ok' });
    const user = createUser(system);
    const src = await insertSource(system, user.id);
    const wh = await hook(system, user, src, r.url);
    await subscriptionsLoaded(system);
    const data = { lone: '\ud800', nul: 'a\u0000b', line: '\u2028\u2029', emoji: '😀', '2': 'two', '10': 'ten', big: 1e21, neg: -0, esc: '</script>\\"' };
    const ev = await emitter.emit(src, user.id, data);
    await eventually(async () => r.received.length >= 3, { what: 'three attempts', timeoutMs: 30_000 });
    const verifier = new Verifier(wh.secret);
    const attempts = r.received.slice(0, 3);
    expect(new Set(attempts.map((a) => a.headers['webhook-id']))).toEqual(new Set([ev.id]));
    expect(new Set(attempts.map((a) => a.body)).size).toBe(1);
    for (const a of attempts) expect(verifier.verify(a.body, a.headers as Record<string, string>)).toEqual(JSON.parse(JSON.stringify(data)));
    await r.stop();
  });
});
