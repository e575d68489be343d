import { promises as dnsPromises } from 'node:dns';
import { pbkdf2 } from 'node:crypto';
import { parseHosts, resolveHost } from './resolve-host';
import { startDnsServer, type DnsServer } from './test-support/dns-server';

describe('resolveHost', () => {
  let dns: DnsServer;
  let resolver: dnsPromises.Resolver;

  beforeAll(async () => {
    dns = await startDnsServer();
    resolver = new dnsPromises.Resolver({ timeout: 300, tries: 1 });
    resolver.setServers([dns.server]);
  });
  afterAll(() => dns.socket.close());

  it('answers from the DNS server, an unknown name as ENOTFOUND', async () => {
    await expect(resolveHost('OK.test.', { resolver })).resolves.toEqual([{ address: '192.0.2.7', family: 4 }]);
    await expect(resolveHost('ok.nothing', { resolver })).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  it('answers names of /etc/hosts from the file (localhost) without a query', async () => {
    await expect(resolveHost('localhost', { resolver })).resolves.toEqual(expect.arrayContaining([{ address: '127.0.0.1', family: 4 }]));
  });

  it("leaves libuv's thread pool free while a server never answers, and gives up in bounded time", async () => {
    const silent = Array.from({ length: 16 }, (_, i) => resolveHost(`silent${i}.test`, { resolver }).catch((e: NodeJS.ErrnoException) => e.code));
    // Four pool threads at once: each would wait behind a stuck getaddrinfo if the lookups held the pool.
    const pooled = Array.from({ length: 4 }, () => new Promise<string>((resolve, reject) => pbkdf2('p', 's', 1, 16, 'sha256', (e) => (e ? reject(e) : resolve('done')))));
    const race = await Promise.race([Promise.all(pooled), new Promise((r) => setTimeout(() => r('pool blocked'), 250))]);
    expect(race).toEqual(['done', 'done', 'done', 'done']);
    await expect(resolveHost('ok.test', { resolver })).resolves.toEqual([{ address: '192.0.2.7', family: 4 }]);
    expect(new Set(await Promise.all(silent))).toEqual(new Set(['ETIMEOUT']));
  });

  it('keeps answers for their TTL (30 s at most), a name with no address briefly, and asks once for lookups at once', async () => {
    const fresh = new dnsPromises.Resolver({ timeout: 5_000, tries: 1 });
    fresh.setServers([dns.server]);
    dns.queries.clear();
    const at = await Promise.all(Array.from({ length: 20 }, () => resolveHost('ok.test', { resolver: fresh })));
    expect(at).toEqual(new Array(20).fill([{ address: '192.0.2.7', family: 4 }]));
    await resolveHost('OK.test.', { resolver: fresh });
    await expect(resolveHost('none.test', { resolver: fresh })).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(resolveHost('none.test', { resolver: fresh })).rejects.toMatchObject({ code: 'ENOTFOUND', message: 'getaddrinfo ENOTFOUND none.test' });
    await resolveHost('ttl0.test', { resolver: fresh });
    await resolveHost('ttl0.test', { resolver: fresh });
    // A and AAAA once each, but for the record of TTL 0.
    expect(Object.fromEntries(dns.queries)).toEqual({ 'ok.test': 2, 'none.test': 2, 'ttl0.test': 4 });
  });

  it('keeps 1,000 names at most: past them the least recently used is asked for again', async () => {
    // Every name must be answered (a failed query is not kept): on a loaded machine 200 queries at once took longer
    // than 300 ms, and ok.test was still kept behind fewer than 1,000 names.
    const fresh = new dnsPromises.Resolver({ timeout: 5_000, tries: 2 });
    fresh.setServers([dns.server]);
    await resolveHost('ok.test', { resolver: fresh });
    for (let i = 0; i < 10; i++) await Promise.all(Array.from({ length: 100 }, (_, k) => resolveHost(`n${i * 100 + k}.test`, { resolver: fresh }).catch(() => undefined)));
    dns.queries.clear();
    await resolveHost('n999.test', { resolver: fresh }).catch(() => undefined);
    await resolveHost('ok.test', { resolver: fresh });
    expect(Object.fromEntries(dns.queries)).toEqual({ 'ok.test': 2 });
  });

  it("keeps each account's answers apart: another account's lookups of a name neither answer nor join its own", async () => {
    const fresh = new dnsPromises.Resolver({ timeout: 5_000, tries: 2 });
    fresh.setServers([dns.server]);
    dns.queries.clear();
    const a = { resolver: fresh, account: 'u_a' };
    const b = { resolver: fresh, account: 'u_b' };
    await resolveHost('ok.test', a);
    await resolveHost('ok.test', a);
    expect(dns.queries.get('ok.test')).toBe(2); // A and AAAA once: the second from the account's own answers
    await expect(resolveHost('ok.test', b)).resolves.toEqual([{ address: '192.0.2.7', family: 4 }]);
    expect(dns.queries.get('ok.test')).toBe(4); // the other account's lookup asked the server itself
    await resolveHost('ok.test', { resolver: fresh });
    await resolveHost('ok.test', { resolver: fresh });
    expect(dns.queries.get('ok.test')).toBe(6); // the platform's own lookups share theirs
    await Promise.all([resolveHost('at-once.test', a).catch(() => undefined), resolveHost('at-once.test', b).catch(() => undefined)]);
    expect(dns.queries.get('at-once.test')).toBe(4);
  });

  it("keeps 100 names of each account: one account's many names evict its own, never another's", async () => {
    const fresh = new dnsPromises.Resolver({ timeout: 5_000, tries: 2 });
    fresh.setServers([dns.server]);
    const a = { resolver: fresh, account: 'u_a' };
    const b = { resolver: fresh, account: 'u_b' };
    await resolveHost('ok.test', b);
    await resolveHost('ok.test', { resolver: fresh });
    await resolveHost('ok.test', a);
    await Promise.all(Array.from({ length: 100 }, (_, k) => resolveHost(`a${k}.test`, a).catch(() => undefined)));
    dns.queries.clear();
    await resolveHost('ok.test', b);
    await resolveHost('ok.test', { resolver: fresh });
    expect(dns.queries.get('ok.test')).toBeUndefined();
    await resolveHost('a99.test', a).catch(() => undefined);
    await resolveHost('ok.test', a);
    expect(Object.fromEntries(dns.queries)).toEqual({ 'ok.test': 2 });
  });

  it('reads /etc/hosts lines: aliases, comments, IPv6, IPv4 first', () => {
    const names = parseHosts('# comment\n::1 localhost ip6-localhost\n127.0.0.1 localhost  # trailing\n10.0.0.2 Receiver receiver.local\nbogus line\n');
    expect(names.get('localhost')).toEqual([{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }]);
    expect(names.get('receiver')).toEqual([{ address: '10.0.0.2', family: 4 }]);
    expect(names.get('receiver.local')).toEqual([{ address: '10.0.0.2', family: 4 }]);
    expect(names.has('bogus')).toBe(false);
  });
});
