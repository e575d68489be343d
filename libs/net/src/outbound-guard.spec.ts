import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { GuardedAgent } from './guarded-agent';
import { policyFromConfig } from './address-policy';
import { outboundRefusal } from './outbound-guard';
import { createAgents, safeFetch } from './safe-fetch';
import { interfaceAddress } from './test-support/interface-address';

describe('the outbound guard against a listener on this machine', () => {
  let server: Server;
  let port = 0;
  const hits: string[] = [];
  const deny = { allowLoopback: false, allowPrivate: false };
  const privateOnly = { allowLoopback: false, allowPrivate: true };
  const loopback = { allowLoopback: true, allowPrivate: false };
  const post = { method: 'POST', headers: {}, body: 'x', timeoutMs: 1500, maxBodyBytes: 100 };

  beforeAll(async () => {
    // Listening on every address, as NATS monitoring, the metrics ports and most host services do.
    server = createServer((req, res) => {
      hits.push(`${req.headers.host} ${req.url}`);
      res.end('internal');
    });
    await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));

  it('refuses an address of one of this machine\'s interfaces unless loopback is allowed (webhooks, sends, component_url)', async () => {
    const ip = interfaceAddress();
    const url = `http://${ip}:${port}/metrics`;
    const refused = new RegExp(`${ip.replace(/\./g, '\\.')} is an address of this machine \\(allowed only with ALLOW_LOOPBACK=true\\)`);
    const agent = new GuardedAgent(deny);
    const agents = createAgents(privateOnly);
    try {
      await expect(agent.request(url, post)).rejects.toMatchObject({ code: 'blocked', message: expect.stringMatching(refused) });
      await expect(safeFetch(url, { policy: deny, timeoutMs: 1500, maxBytes: 100 })).rejects.toMatchObject({ code: 'blocked', message: expect.stringMatching(refused) });
      // Private addresses allowed is not this machine allowed (a container's own address is a private one).
      await expect(safeFetch(url, { policy: privateOnly, agents, timeoutMs: 1500, maxBytes: 100 })).rejects.toMatchObject({ code: 'blocked' });
      expect(outboundRefusal(`::ffff:${ip}`, deny)).toMatch(/an address of this machine/);
      expect(hits).toEqual([]);
      // The listener answers when the policy allows it: the refusals above are the guard's.
      const allowed = await safeFetch(url, { policy: loopback, timeoutMs: 1500, maxBytes: 100 });
      expect(allowed.body.toString()).toBe('internal');
      expect(hits).toHaveLength(1);
    } finally {
      await agent.close();
      agents.http.destroy();
    }
  });

  it('refuses every spelling of loopback, unspecified and mapped addresses before connecting', async () => {
    const spellings = ['127.0.0.1', '127.0.0.2', '0.0.0.0', '[::]', '[::1]', '[::ffff:127.0.0.1]', '2130706433', '0177.0.0.1', '0x7f.1', '0x7f000001', '127.1', '127.0.0.1.', '0', '[::127.0.0.1]', '[64:ff9b::127.0.0.1]', '[2002:7f00:1::]', 'localhost', 'LOCALHOST', '%6c%6fcalhost'];
    const agent = new GuardedAgent(deny);
    try {
      for (const host of spellings) {
        const url = `http://${host}:${port}/x`;
        await expect(safeFetch(url, { policy: deny, timeoutMs: 1500, maxBytes: 100, maxRedirects: 3 })).rejects.toMatchObject({ code: 'blocked' });
        await expect(agent.request(url, post)).rejects.toMatchObject({ code: 'blocked' });
      }
      expect(hits.filter((h) => h.endsWith(' /x'))).toEqual([]);
    } finally {
      await agent.close();
    }
  });

  it("refuses the platform's own ports on this machine whatever ALLOW_LOOPBACK says, by every spelling and through redirects", async () => {
    // The listener stands for the delivery app's ops port (its /metrics).
    const policy = policyFromConfig({ allowLoopback: true, allowPrivateAddresses: true, natsUrl: 'nats://127.0.0.1:4222', apiMetricsPort: 9466, runnerMetricsPort: 9464, deliveryMetricsPort: port });
    expect([...(policy.platformPorts ?? [])].sort((x, y) => x - y)).toEqual([4222, 5432, 6222, 8222, 9464, 9466, port].sort((x, y) => x - y));
    const agent = new GuardedAgent(policy);
    const agents = createAgents(policy);
    const redirector = createServer((_req, res) => void res.writeHead(302, { location: `http://127.0.0.1:${port}/metrics` }).end());
    await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r));
    const before = hits.length;
    try {
      for (const host of ['127.0.0.1', 'localhost', '[::1]', '0x7f.1', interfaceAddress()]) {
        const url = `http://${host}:${port}/metrics`;
        const refused = { code: 'blocked', message: expect.stringMatching(new RegExp(`:${port} is a port of this platform's own services on this machine`)) };
        await expect(agent.request(url, post)).rejects.toMatchObject(refused);
        await expect(safeFetch(url, { policy, agents, timeoutMs: 1500, maxBytes: 100 })).rejects.toMatchObject(refused);
        await expect(safeFetch(url, { policy, timeoutMs: 1500, maxBytes: 100 })).rejects.toMatchObject(refused);
      }
      await expect(safeFetch(`http://127.0.0.1:${(redirector.address() as AddressInfo).port}/`, { policy, agents, timeoutMs: 1500, maxBytes: 100, maxRedirects: 2 })).rejects.toMatchObject({ code: 'blocked' });
      expect(hits.slice(before)).toEqual([]);
      // Any other port of this machine is loopback, allowed here: the redirector answered.
      const other = await agent.request(`http://localhost:${(redirector.address() as AddressInfo).port}/`, post);
      expect(other.status).toBe(302);
    } finally {
      await agent.close();
      agents.http.destroy();
      redirector.close();
    }
  });
});
