import { createServer, Server } from 'node:http';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * The delivery app sends every account's `$.send.http` requests over one pool of keep-alive connections. A send
 * that chose how its own request is framed (a GET with `Content-Length: 60` and no body) left the connection
 * expecting bytes it never sent: the receiver, answering at once as most do, read the next request on that
 * connection — another account's — as the rest of it, and answered that one 400, a failure the delivery app does
 * not retry. So the headers that frame a request or manage its connection are the platform's to set.
 */
const step = (body: string) => `export default defineComponent({ async run({ steps, $ }) { ${body} } });`;
type Run = { status: string; steps: { error?: { name: string; message: string } }[] };

describe("$.send.http headers that frame the request on a connection other accounts' sends share", () => {
  let system: System;
  let receiver: Server;
  let url = '';
  const seen: string[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
      res.end('ok');
    });
    receiver.on('clientError', (e: NodeJS.ErrnoException, socket) => {
      seen.push(`unreadable request (${e.code})`);
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
    system = await startSystem({ WEBHOOK_RETRY_SCHEDULE: '1h' });
  });
  afterAll(async () => {
    await system?.stop();
    await new Promise((r) => receiver?.close(r));
  });

  const runOnce = async (user: TestUser, name: string, body: string): Promise<Run> => {
    const api = client(system, user.apiKey);
    const created = await api.post('/workflows', { name, trigger: { manual: {} }, steps: [{ name: 'send', code: step(body) }] });
    expect(created.status).toBe(200);
    expect((await api.post(`/workflows/${created.body.data.id}/run`, {})).status).toBe(202);
    return eventually(async () => (await api.get(`/workflows/${created.body.data.id}/runs`)).body.data?.[0] as Run | undefined, { what: `the run of ${name}`, timeoutMs: 30_000 });
  };

  it("fails the step that sets one, and another account's send to the same receiver arrives as sent", async () => {
    const a = createUser(system);
    const b = createUser(system);
    const framing: [string, string][] = [['Content-Length', '60'], ['transfer-encoding', 'chunked'], ['Connection', 'close'], ['keep-alive', 'timeout=600'], ['Upgrade', 'websocket'], ['TE', 'trailers'], ['Trailer', 'x-t'], ['Expect', '100-continue']];
    for (const [i, [header, value]] of framing.entries()) {
      const run = await runOnce(a, `a-framing-${i}`, `$.send.http({ url: ${JSON.stringify(`${url}/a${i}`)}, method: "GET", headers: { ${JSON.stringify(header)}: ${JSON.stringify(value)} } });`);
      expect({ header, status: run.status, error: run.steps[0].error }).toEqual({ header, status: 'error', error: { name: 'SendError', message: `$.send.http(): header ${header} is the platform's to set (it frames the request or manages its connection)` } });
    }
    // B's send reaches the receiver whole, with its own request line and headers.
    expect((await runOnce(b, 'b-send', `$.send.http({ url: ${JSON.stringify(`${url}/b`)}, headers: { authorization: "Bearer b-token" }, data: { n: 1 } });`)).status).toBe('success');
    await eventually(async () => seen.includes('POST /b Bearer b-token'), { what: "B's request at the receiver", timeoutMs: 30_000 });
    expect(seen).toEqual(['POST /b Bearer b-token']);
  });
});
