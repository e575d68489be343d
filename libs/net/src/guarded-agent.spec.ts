import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { GuardedAgent } from './guarded-agent';
import { createAgents, safeFetch } from './safe-fetch';

describe('GuardedAgent', () => {
  let server: Server;
  let base: string;
  let connections = 0;
  const seen: { url?: string; method?: string; authorization?: string; body: string }[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ url: req.url, method: req.method, authorization: req.headers.authorization, body });
        if (req.url === '/redirect') return void res.writeHead(302, { location: '/hello' }).end();
        if (req.url === '/big') return void res.end('x'.repeat(10_000));
        if (req.url === '/slow') {
          const t = setTimeout(() => res.end('late'), 300);
          return void res.on('close', () => clearTimeout(t));
        }
        if (req.url === '/headers') {
          return void res
            .writeHead(503, [['Retry-After', '7'], ['Retry-After', '9'], ['Set-Cookie', 'a=1'], ['Set-Cookie', 'b=2'], ['X-Many', 'one'], ['X-Many', 'two'], ['X-Latin', 'caf\u00e9']])
            .end('busy');
        }
        res.end('hello');
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  const allow = { allowLoopback: true, allowPrivate: false };
  const deny = { allowLoopback: false, allowPrivate: false };
  const post = { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'ping', timeoutMs: 1000, maxBodyBytes: 100 };

  it('POSTs the body and headers, and reuses kept-alive connections', async () => {
    const agent = new GuardedAgent(allow, 4);
    try {
      const before = connections;
      for (let i = 0; i < 5; i++) {
        const res = await agent.request(`${base}/x?i=${i}`, post);
        expect(res).toMatchObject({ status: 200, truncated: false });
        expect(res.body.toString()).toBe('hello');
      }
      expect(seen.at(-1)).toMatchObject({ url: '/x?i=4', method: 'POST', body: 'ping' });
      // undici's pool may take a second connection while the first is being released; never one per request.
      expect(connections - before).toBeLessThanOrEqual(2);
    } finally {
      await agent.close();
    }
  });

  it('reads response headers as node:http does (repeats dropped or joined, set-cookie a list, latin1)', async () => {
    const agent = new GuardedAgent(allow);
    const agents = createAgents(allow);
    try {
      const res = await agent.request(`${base}/headers`, post);
      const old = await safeFetch(`${base}/headers`, { policy: allow, agents, method: 'POST', body: 'ping', timeoutMs: 1000, maxBytes: 100 });
      expect(res.headers).toMatchObject({ 'retry-after': '7', 'set-cookie': ['a=1', 'b=2'], 'x-many': 'one, two' });
      expect({ ...res.headers, date: undefined }).toEqual({ ...old.headers, date: undefined });
    } finally {
      agents.http.destroy();
      await agent.close();
    }
  });

  it('refuses forbidden addresses, literal or resolved from a name, over http and https', async () => {
    const agent = new GuardedAgent(deny);
    try {
      const port = new URL(base).port;
      await expect(agent.request(`${base}/`, post)).rejects.toMatchObject({ code: 'blocked', message: expect.stringMatching(/loopback/) });
      await expect(agent.request(`http://[::ffff:127.0.0.1]:${port}/`, post)).rejects.toMatchObject({ code: 'blocked' });
      await expect(agent.request(`http://localhost:${port}/`, post)).rejects.toMatchObject({ code: 'blocked', message: expect.stringMatching(/refused to connect to localhost: .* loopback/) });
      await expect(agent.request(`https://localhost:${port}/`, post)).rejects.toMatchObject({ code: 'blocked', message: expect.stringMatching(/refused to connect to localhost/) });
      await expect(agent.request('https://169.254.169.254/latest', post)).rejects.toMatchObject({ code: 'blocked', message: expect.stringMatching(/metadata/) });
    } finally {
      await agent.close();
    }
  });

  it('returns a redirect as it is, truncates a large body, and gives up at the timeout', async () => {
    const agent = new GuardedAgent(allow);
    try {
      const redirect = await agent.request(`${base}/redirect`, post);
      expect(redirect.status).toBe(302);
      expect(redirect.headers.location).toBe('/hello');
      const cut = await agent.request(`${base}/big`, post);
      expect(cut).toMatchObject({ status: 200, truncated: true });
      expect(cut.body.toString()).toBe('x'.repeat(100));
      await expect(agent.request(`${base}/slow`, { ...post, timeoutMs: 100 })).rejects.toMatchObject({ code: 'timeout' });
      await expect(agent.request('ftp://example.com/', post)).rejects.toMatchObject({ code: 'bad_url' });
    } finally {
      await agent.close();
    }
  });

  it('a request that times out waiting for a connection leaves the connection pooled', async () => {
    const agent = new GuardedAgent(allow, 1);
    try {
      const before = connections;
      const slow = agent.request(`${base}/slow`, post);
      await expect(agent.request(`${base}/queued`, { ...post, timeoutMs: 50 })).rejects.toMatchObject({ code: 'timeout' });
      expect((await slow).body.toString()).toBe('late');
      expect((await agent.request(`${base}/after`, post)).status).toBe(200);
      expect(connections - before).toBe(1);
      expect(seen.map((s) => s.url)).not.toContain('/queued');
    } finally {
      await agent.close();
    }
  });

  it('sends URL credentials as Basic authorization, and fails requests once closed', async () => {
    const agent = new GuardedAgent(allow);
    await agent.request(base.replace('http://', 'http://us%40er:p%3Ass@') + '/auth', post);
    expect(seen.at(-1)?.authorization).toBe(`Basic ${Buffer.from('us@er:p:ss').toString('base64')}`);
    await agent.close();
    await expect(agent.request(`${base}/`, post)).rejects.toMatchObject({ code: 'network' });
  });
});
