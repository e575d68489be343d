import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { endWithJsonAnswer, rawJsonAnswer } from './raw-json-answers';

/** What an HTTP client reads from a server on `server` (already listening). */
async function answerOf(server: Server | ReturnType<typeof createHttpServer>): Promise<{ status: number; reason: string; headers: IncomingHttpHeaders; body: unknown }> {
  const { port } = server.address() as AddressInfo;
  const res = await fetch(`http://127.0.0.1:${port}/`);
  const headers: IncomingHttpHeaders = Object.fromEntries(res.headers);
  return { status: res.status, reason: res.statusText, headers, body: await res.json() };
}

const listening = <S extends Server | ReturnType<typeof createHttpServer>>(server: S): Promise<S> => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));

describe('raw JSON answers', () => {
  const expected = {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'retry-after': '1',
    connection: 'close',
  };

  it('writes on a bare socket an HTTP answer a client reads: status, reason, JSON body and its length, the API answer headers', async () => {
    const body = { error: 'é'.repeat(3), code: 'unavailable' };
    const server = await listening(createServer((socket) => socket.once('data', () => socket.end(rawJsonAnswer(503, 'Service Unavailable', body, { 'retry-after': '1' })))));
    try {
      const answer = await answerOf(server);
      expect(answer).toEqual({ status: 503, reason: 'Service Unavailable', headers: expect.objectContaining({ ...expected, 'content-length': String(Buffer.byteLength(JSON.stringify(body))) }), body });
    } finally {
      server.close();
    }
  });

  it('writes the same answer on a response object', async () => {
    const body = { error: 'x', code: 'unavailable' };
    const server = await listening(createHttpServer((_req, res) => endWithJsonAnswer(res, 503, body, { 'retry-after': '1' })));
    try {
      expect(await answerOf(server)).toEqual({ status: 503, reason: 'Service Unavailable', headers: expect.objectContaining(expected), body });
    } finally {
      server.close();
    }
  });
});
