import { connect, type Socket } from 'node:net';
import { eventually, startSystem, System } from './support/system';

const PER_ADDRESS = 20;
const TOTAL = 50;
/** A proxy TRUST_PROXY names: its connections are its many clients', not bounded per address. */
const PROXY = '127.0.0.10';

/** A connection to the api from `localAddress` (any of 127.0.0.0/8 is this machine), once it is open. */
function open(system: System, localAddress: string): Promise<Socket> {
  const { port } = new URL(system.origin);
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port: Number(port), localAddress }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Sends `GET /healthz` on `socket` and resolves with everything the api sent until it closed or answered whole. */
function ask(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const done = (): void => resolve(text);
    socket.on('data', (d) => {
      text += d.toString();
      const [head, body = ''] = text.split('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? NaN);
      if (body.length >= length) done();
    });
    socket.once('close', done);
    socket.once('error', done);
    socket.write('GET /healthz HTTP/1.1\r\nHost: api\r\n\r\n');
  });
}

/** One request on a new connection from `localAddress`, closed once answered: what the api sent. */
async function probe(system: System, localAddress: string): Promise<string> {
  const socket = await open(system, localAddress);
  const text = await ask(socket);
  socket.destroy();
  await new Promise((r) => setTimeout(r, 200));
  return text;
}

/**
 * Connections were not bounded: one client opening connections and sending nothing held them until Node's
 * timeouts, every one a file descriptor of the api, which also needs them for Postgres, NATS and its sandboxes.
 */
describe("the api's client connections", () => {
  let system: System;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    system = await startSystem({ HTTP_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS), HTTP_MAX_CONNECTIONS: String(TOTAL), TRUST_PROXY: PROXY }, { apps: ['api'] });
  });
  afterAll(async () => {
    sockets.forEach((s) => s.destroy());
    await system?.stop();
  });

  it('are bounded per client address (503 with Retry-After) but for trusted proxies, and in all (closed), and freed as they close', async () => {
    for (let i = 0; i < PER_ADDRESS; i++) sockets.push(await open(system, '127.0.0.2'));
    // This address's next connection is refused in the error shape, and nothing of its request is handled.
    const refused = await probe(system, '127.0.0.2');
    expect(refused).toMatch(/^HTTP\/1\.1 503 /);
    expect(refused).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(refused).toMatch(/\r\ncache-control: no-store\r\n/i);
    expect(refused).toMatch(/\r\nx-content-type-options: nosniff\r\n/i);
    const body = JSON.parse(refused.split('\r\n\r\n')[1]) as { code: string; details: { max_connections: number } };
    expect(body).toMatchObject({ code: 'unavailable', details: { max_connections: PER_ADDRESS } });

    // Another address is served meanwhile.
    expect(await probe(system, '127.0.0.3')).toMatch(/^HTTP\/1\.1 200 /);

    // Once some of them are closed, the address has its room back.
    for (const s of sockets.splice(0, 5)) s.destroy();
    await eventually(async () => /^HTTP\/1\.1 200 /.test(await probe(system, '127.0.0.2')), { what: 'the address served again' });

    // A proxy TRUST_PROXY names may hold more.
    const proxied: Socket[] = [];
    for (let i = 0; i < PER_ADDRESS; i++) proxied.push(await open(system, PROXY));
    expect(await probe(system, PROXY)).toMatch(/^HTTP\/1\.1 200 /);
    proxied.forEach((s) => s.destroy());
    await new Promise((r) => setTimeout(r, 200));

    // Past HTTP_MAX_CONNECTIONS in all (the harness's own keep-alive connection counts too), a new connection is
    // closed without an answer; the others stay.
    for (let i = 0; sockets.length < TOTAL; i++) sockets.push(await open(system, `127.0.0.${4 + (i % 5)}`));
    await new Promise((r) => setTimeout(r, 300));
    expect(await probe(system, '127.0.0.9')).toBe('');
    expect(await ask(sockets[0])).toMatch(/^HTTP\/1\.1 200 /);
  });
});
