import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { ApiClient } from './api-client';

/**
 * A local stand-in for the api's list routes, for the CLI's unit tests: `lists(path)` gives the items of a path
 * (answered as one page), undefined a 404 with `notFound` as its error. Returns a client of it and its close.
 */
export async function listServer(lists: (path: string) => unknown[] | undefined, notFound = 'not found'): Promise<{ client: ApiClient; close: () => void }> {
  const server = createServer((req, res) => {
    const data = lists((req.url ?? '').split('?')[0]);
    res.setHeader('content-type', 'application/json');
    if (!data) return res.writeHead(404).end(JSON.stringify({ error: notFound, code: 'not_found' }));
    res.end(JSON.stringify({ page_info: { total_count: data.length, count: data.length, start_cursor: 'x', end_cursor: 'y' }, data }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = new ApiClient({ profile: 'default', apiKey: 'k', apiBaseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, configPath: '/dev/null' });
  return {
    client,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
