import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { ApiClient } from './api-client';
import { json, obj, str } from './answer-shape';

/** A local HTTP server standing in for the API's list and error responses. */
function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; base: string }> {
  const server = createServer(handler);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` })));
}

const client = (base: string, apiKey: string | null = 'k'): ApiClient => new ApiClient({ profile: 'default', apiKey: apiKey ?? undefined, apiBaseUrl: base, configPath: '/dev/null' });

describe('ApiClient', () => {
  it('follows end_cursor through every page of a list', async () => {
    const items = Array.from({ length: 230 }, (_, i) => ({ id: `dc_${i}` }));
    const seen: string[] = [];
    const { server, base } = await serve((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      seen.push(`${url.searchParams.get('limit')}:${url.searchParams.get('after') ?? ''}`);
      const start = Number(url.searchParams.get('after') ?? 0);
      const data = items.slice(start, start + 100);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ page_info: { total_count: items.length, count: data.length, start_cursor: String(start), end_cursor: String(start + data.length) }, data }));
    });
    try {
      const all = await client(base).listAll('/users/me/sources', obj({ id: str }));
      expect(all.map((s) => s.id)).toEqual(items.map((s) => s.id));
      expect(seen).toEqual(['100:', '100:100', '100:200']);
    } finally {
      server.close();
    }
  });

  it('turns error bodies, a wrong base URL and non-JSON answers into one clear message', async () => {
    const { server, base } = await serve((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url?.startsWith('/v1/users/me/sources')) return res.writeHead(401).end(JSON.stringify({ error: 'invalid API key', code: 'unauthorized' }));
      if (req.url?.startsWith('/v1/html')) return res.writeHead(200, { 'content-type': 'text/html' }).end('<html>');
      if (req.url?.startsWith('/v1/sources')) return res.writeHead(400).end(JSON.stringify({ error: 'configured_props.count: must be at most 5', code: 'invalid_request', details: { prop: 'count', limit: 5 } }));
      res.writeHead(404).end(JSON.stringify({ error: `no such route: GET ${req.url}`, code: 'not_found' }));
    });
    try {
      await expect(client(base).get('/users/me/sources', json)).rejects.toThrow('authentication failed (invalid API key): check your API key with `pd login` or PD_API_KEY (profile "default")');
      await expect(client(base).request('POST', '/sources', { body: {} })).rejects.toThrow('configured_props.count: must be at most 5 (HTTP 400)');
      await expect(client(base).get('/nope', json)).rejects.toThrow(`is api_base_url ${base} right? It ends in /v1`);
      await expect(client(base).get('/html', json)).rejects.toThrow(/body that is not JSON/);
      await expect(client(base, null).get('/users/me', json)).rejects.toThrow('no API key configured for profile "default": run `pd login` or set PD_API_KEY');
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
    await expect(client(base).get('/users/me', json)).rejects.toThrow(`cannot reach the API at ${base}: connection refused`);
  });
});
