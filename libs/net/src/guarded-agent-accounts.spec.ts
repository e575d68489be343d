import { promises as dnsPromises } from 'node:dns';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { AccountSlots } from './account-slots';
import { GuardedAgent } from './guarded-agent';
import { startDnsServer, type DnsServer } from './test-support/dns-server';

/** Polls `check` until it holds (or fails the test after 5 s). */
async function until(check: () => boolean, what: string): Promise<void> {
  for (const deadline = Date.now() + 5_000; !check(); ) {
    if (Date.now() > deadline) throw new Error(`still not: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("GuardedAgent: each account's lookups", () => {
  let dns: DnsServer;
  let resolver: dnsPromises.Resolver;
  let receiver: Server;
  let port: number;
  const allow = { allowLoopback: true, allowPrivate: false };
  const post = { method: 'POST', headers: {}, body: 'ping', timeoutMs: 10_000, maxBodyBytes: 100 };

  beforeAll(async () => {
    dns = await startDnsServer();
    resolver = new dnsPromises.Resolver({ timeout: 10_000, tries: 1 });
    resolver.setServers([dns.server]);
    receiver = createServer((req, res) => void req.resume().on('end', () => res.end('ok')));
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    port = (receiver.address() as AddressInfo).port;
  });
  afterAll(async () => {
    dns.release();
    dns.socket.close();
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
  });

  it("looks a webhook's host up as its account: another account's lookup of it is not answered from the first's", async () => {
    const agent = new GuardedAgent(allow, 4, { resolver });
    try {
      dns.queries.clear();
      const a1 = await agent.request(`http://shared.loop.test:${port}/`, { ...post, poolKey: 'wh_a1', account: 'u_a' });
      const a2 = await agent.request(`http://shared.loop.test:${port}/`, { ...post, poolKey: 'wh_a2', account: 'u_a' });
      expect([a1.status, a2.status]).toEqual([200, 200]);
      expect(dns.queries.get('shared.loop.test')).toBe(2); // A and AAAA, once for the account's two webhooks
      const b = await agent.request(`http://shared.loop.test:${port}/`, { ...post, poolKey: 'wh_b', account: 'u_b' });
      expect(b.status).toBe(200);
      expect(dns.queries.get('shared.loop.test')).toBe(4);
    } finally {
      await agent.close();
    }
  });

  it("past an account's lookups at once, its next connections wait for its own lookups, never another account's", async () => {
    const agent = new GuardedAgent(allow, 4, { resolver, lookups: new AccountSlots(2) });
    try {
      dns.queries.clear();
      // Account A: five webhooks on hosts whose DNS server does not answer yet.
      const slow = Array.from({ length: 5 }, (_, i) => agent.request(`http://held${i}.loop.test:${port}/`, { ...post, poolKey: `wh_a${i}`, account: 'u_a' }));
      await until(() => [...dns.queries.keys()].filter((n) => n.startsWith('held')).length === 2, "two of A's names asked for");
      // Account B's delivery is answered while all of A's wait, and A's other three names were never asked for yet.
      const b = await agent.request(`http://fast.loop.test:${port}/`, { ...post, poolKey: 'wh_b', account: 'u_b' });
      expect(b.status).toBe(200);
      expect([...dns.queries.keys()].filter((n) => n.startsWith('held'))).toHaveLength(2);
      // Once the server answers, every one of A's deliveries goes out: waiting delayed them, it lost none.
      dns.release();
      expect((await Promise.all(slow)).map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      expect([...dns.queries.keys()].filter((n) => n.startsWith('held')).sort()).toEqual(['held0.loop.test', 'held1.loop.test', 'held2.loop.test', 'held3.loop.test', 'held4.loop.test']);
    } finally {
      await agent.close();
    }
  });
});
