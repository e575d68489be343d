import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { classifyAddress, refusalReason } from './address-policy';
import { OutboundError } from './outbound-guard';
import { safeFetch } from './safe-fetch';

describe('address policy', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.20.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['fd12::1', 'private'],
    ['198.18.0.1', 'private'],
    ['198.19.255.254', 'private'],
    ['198.20.0.1', 'public'],
    ['fec0::1', 'private'],
    ['::ffff:198.18.0.1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['::ffff:7f00:1', 'loopback'],
    ['64:ff9b::169.254.169.254', 'metadata'],
    ['64:ff9b::a9fe:1', 'link-local'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::808:808', 'public'],
    ['64:ff9b:1::127.0.0.1', 'loopback'],
    ['64:ff9b:1::a9fe:a9fe', 'metadata'],
    ['64:ff9b:1:abcd::808:808', 'public'],
    ['64:ff9b:1::808:808', 'public'],
    // Read with a /48 prefix (the IPv4 address in bits 48-63 and 72-87): 10.0.0.1, and 127.0.0.1 past a suffix.
    ['64:ff9b:1:a00:0:100::', 'private'],
    ['64:ff9b:1:7f00:0:100:0:1', 'loopback'],
    // 8.8.8.10 with a /64 prefix, 10.0.0.1 with a /96 one: the gateway's is not known, the most refused wins.
    ['64:ff9b:1:0:8:808:a00:1', 'private'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['::ffff:0:a9fe:a9fe', 'metadata'],
    ['::ffff:0:10.0.0.1', 'private'],
    ['::ffff:0:808:808', 'public'],
    ['2002:a9fe:a9fe::1', 'metadata'],
    ['2002:a00:1::1', 'private'],
    ['::7f00:1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1%eth0', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['8.8.8.8', 'public'],
    ['2606:4700::1111', 'public'],
  ])('classifies %s as %s', (ip, cls) => {
    expect(classifyAddress(ip)).toBe(cls);
  });

  it('refuses metadata and link-local addresses even when everything else is allowed', () => {
    const open = { allowLoopback: true, allowPrivate: true };
    expect(refusalReason('169.254.169.254', open)).toMatch(/metadata/);
    expect(refusalReason('fe80::1', open)).toMatch(/link-local/);
    expect(refusalReason('10.0.0.1', open)).toBeUndefined();
    expect(refusalReason('127.0.0.1', { allowLoopback: false, allowPrivate: true })).toMatch(/ALLOW_LOOPBACK/);
    expect(refusalReason('10.0.0.1', { allowLoopback: true, allowPrivate: false })).toMatch(/ALLOW_PRIVATE_ADDRESSES/);
  });

  it('refuses a NAT64 local-use address when any reading of it is refused', () => {
    // 127.10.0.10 with a /64 prefix, 10.0.0.1 with a /96 one: each setting refuses one of them.
    const both = '64:ff9b:1:0:7f:a00:a00:1';
    expect(refusalReason(both, { allowLoopback: true, allowPrivate: false })).toMatch(/private address/);
    expect(refusalReason(both, { allowLoopback: false, allowPrivate: true })).toMatch(/loopback address/);
    expect(refusalReason(both, { allowLoopback: true, allowPrivate: true })).toBeUndefined();
  });
});

describe('safeFetch', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/redirect') {
        res.writeHead(302, { location: '/hello' });
        return res.end();
      }
      if (req.url === '/big') return res.end('x'.repeat(10_000));
      if (req.url?.startsWith('/slow-redirect/')) {
        // Each hop answers within 150 ms, the next one somewhere else.
        const n = Number(req.url.split('/')[2]);
        const t = setTimeout(() => res.writeHead(302, { location: `/slow-redirect/${n + 1}` }).end(), 150);
        return void req.on('close', () => clearTimeout(t));
      }
      if (req.url === '/slow') {
        const t = setTimeout(() => res.end('late'), 2_000);
        return void req.on('close', () => clearTimeout(t));
      }
      res.end('hello');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  const allow = { allowLoopback: true, allowPrivate: false };

  it('fetches from loopback only when the policy allows it', async () => {
    expect((await safeFetch(`${base}/`, { policy: allow, timeoutMs: 1000, maxBytes: 100 })).body.toString()).toBe('hello');
    await expect(safeFetch(`${base}/`, { policy: { allowLoopback: false, allowPrivate: false }, timeoutMs: 1000, maxBytes: 100 })).rejects.toMatchObject({ code: 'blocked' });
    const byName = `http://localhost:${new URL(base).port}/`;
    await expect(safeFetch(byName, { policy: { allowLoopback: false, allowPrivate: false }, timeoutMs: 1000, maxBytes: 100 })).rejects.toThrow(/loopback/);
  });

  it('returns a redirect as it is unless redirects are allowed, and checks each hop', async () => {
    expect((await safeFetch(`${base}/redirect`, { policy: allow, timeoutMs: 1000, maxBytes: 100 })).status).toBe(302);
    const followed = await safeFetch(`${base}/redirect`, { policy: allow, timeoutMs: 1000, maxBytes: 100, maxRedirects: 3 });
    expect(followed.status).toBe(200);
    expect(followed.url).toBe(`${base}/hello`);
  });

  it('sends the caller\'s credentials to no other origin a redirect names, and turns a 303 into a GET without a body', async () => {
    const seen: { url?: string; method?: string; authorization?: string; cookie?: string; custom?: string; body: string }[] = [];
    const other = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ url: req.url, method: req.method, authorization: req.headers.authorization, cookie: req.headers.cookie, custom: req.headers['x-custom'] as string | undefined, body });
        if (req.url === '/see-other') return void res.writeHead(303, { location: '/done' }).end();
        if (req.url === '/elsewhere') return void res.writeHead(307, { location: `${base}/hello` }).end();
        res.end('done');
      });
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const otherBase = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    try {
      const headers = { authorization: 'Bearer tenant-token', cookie: 's=1', 'x-custom': 'kept', 'content-type': 'application/json' };
      const res = await safeFetch(`${otherBase}/see-other`, { policy: allow, method: 'POST', headers, body: '{"a":1}', timeoutMs: 1000, maxBytes: 100, maxRedirects: 3 });
      expect(res.body.toString()).toBe('done');
      // Same origin: credentials kept; 303: a GET without the body.
      expect(seen).toEqual([
        { url: '/see-other', method: 'POST', authorization: 'Bearer tenant-token', cookie: 's=1', custom: 'kept', body: '{"a":1}' },
        { url: '/done', method: 'GET', authorization: 'Bearer tenant-token', cookie: 's=1', custom: 'kept', body: '' },
      ]);
      let arrived: { authorization?: string; cookie?: string; method?: string } | undefined;
      server.once('request', (req) => (arrived = { authorization: req.headers.authorization, cookie: req.headers.cookie, method: req.method }));
      await safeFetch(`${otherBase}/elsewhere`, { policy: allow, method: 'PUT', headers, body: 'x', timeoutMs: 1000, maxBytes: 100, maxRedirects: 3 });
      // Another origin (another port): 307 keeps the method, never the credentials.
      expect(arrived).toEqual({ authorization: undefined, cookie: undefined, method: 'PUT' });
    } finally {
      other.closeAllConnections();
      await new Promise<void>((r) => other.close(() => r()));
    }
  });

  it('enforces the size cap and the timeout', async () => {
    await expect(safeFetch(`${base}/big`, { policy: allow, timeoutMs: 1000, maxBytes: 100 })).rejects.toMatchObject({ code: 'too_large' });
    const cut = await safeFetch(`${base}/big`, { policy: allow, timeoutMs: 1000, maxBytes: 100, truncate: true });
    expect(cut.body.length).toBe(100);
    expect(cut.truncated).toBe(true);
    await expect(safeFetch(`${base}/slow`, { policy: allow, timeoutMs: 200, maxBytes: 100 })).rejects.toBeInstanceOf(OutboundError);
  });

  it('bounds the whole request, its redirects together, by the timeout (not each hop)', async () => {
    // Five hops of 150 ms each fit a per-hop timeout of 400 ms, not a whole one.
    await expect(safeFetch(`${base}/slow-redirect/0`, { policy: allow, timeoutMs: 400, maxBytes: 100, maxRedirects: 5 })).rejects.toMatchObject({
      code: 'timeout',
      message: expect.stringContaining('within 400 ms'),
    });
  });

  it('rejects URLs without http(s) or a host', async () => {
    await expect(safeFetch('ftp://example.com/x', { policy: allow, timeoutMs: 100, maxBytes: 1 })).rejects.toMatchObject({ code: 'bad_url' });
    await expect(safeFetch('not a url', { policy: allow, timeoutMs: 100, maxBytes: 1 })).rejects.toMatchObject({ code: 'bad_url' });
  });
});
