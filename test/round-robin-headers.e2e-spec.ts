import { createServer, IncomingHttpHeaders, request, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

interface RoundRobin {
  url: string;
  close(): Promise<void>;
}
// eslint-disable-next-line @typescript-eslint/no-var-requires
const { startRoundRobin } = require('../scripts/lib/round-robin.js') as { startRoundRobin(o: { port: number; upstreams: { host: string; port: number }[] }): Promise<RoundRobin> };

/**
 * The round-robin in front of the api replicas (`npm run cluster`, the fault suite, compose's `cluster-lb`) is the hop
 * the api trusts (TRUST_PROXY): the forwarding headers that reach the api are the ones it wrote, not the client's, so a
 * client cannot choose the host the api takes its request for (an endpoint's own `<key>.<ENDPOINT_DOMAIN>`, under which
 * a component's cookies keep their own Path) or the scheme.
 */
describe('the round-robin in front of the api replicas', () => {
  let upstream: Server;
  let lb: RoundRobin;
  let seen: IncomingHttpHeaders | undefined;

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      seen = req.headers;
      req.resume();
      req.on('end', () => res.end('{}'));
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    lb = await startRoundRobin({ port: 0, upstreams: [{ host: '127.0.0.1', port: (upstream.address() as AddressInfo).port }] });
  });
  afterAll(async () => {
    await lb?.close();
    await new Promise<void>((r) => upstream.close(() => r()));
  });

  const through = (headers: Record<string, string>): Promise<IncomingHttpHeaders> =>
    new Promise((resolve, reject) => {
      const req = request(`${lb.url}/e/enabc`, { method: 'POST', headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(seen!));
      });
      req.on('error', reject);
      req.end('{}');
    });

  it("replaces the client's X-Forwarded-Host and -Proto with its own, drops Forwarded, and appends the client to X-Forwarded-For", async () => {
    const got = await through({
      host: 'api.example.com',
      'x-forwarded-host': 'enabc.endpoints.example.com',
      'x-forwarded-proto': 'https',
      forwarded: 'for=10.0.0.9;host=enabc.endpoints.example.com',
      'x-forwarded-for': '10.0.0.9',
    });
    expect(got['x-forwarded-host']).toBe('api.example.com');
    expect(got['x-forwarded-proto']).toBe('http');
    expect(got.forwarded).toBeUndefined();
    expect(got['x-forwarded-for']).toBe('10.0.0.9, 127.0.0.1');
  });
});
