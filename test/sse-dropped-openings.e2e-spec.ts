import { connect as netConnect } from 'node:net';
import { client } from './support/accounts';
import { apiOnlySystem } from './support/system-with-user';
import { eventually } from './support/system';
import { insertSource } from './events.helpers';

/**
 * A client that goes away while its event stream is being opened (the source checked, the JetStream consumer made:
 * a dashboard tab closed, a phone losing its network, a client's own timeout) must give its place back. Before, the
 * stream was held after the socket had closed, so the close that frees it never came: the key's place in
 * SSE_MAX_STREAMS_PER_KEY, its keep-alive check of Postgres and its consumer on NATS stayed for the api's lifetime,
 * and after SSE_MAX_STREAMS_PER_KEY such drops every stream of the key was refused 429 until the api restarted.
 */
describe('an event stream whose client leaves while it opens', () => {
  const MAX = 5;
  const ctx = apiOnlySystem({ SSE_MAX_STREAMS_PER_KEY: String(MAX), SSE_KEEPALIVE_MS: '300' });

  /** Sends a stream's request and closes the socket `ms` later, whatever was answered. */
  const dropAfter = (path: string, ms: number): Promise<void> =>
    new Promise((resolve) => {
      const socket = netConnect({ port: Number(new URL(ctx.system.origin).port), host: '127.0.0.1' }, () => {
        socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${ctx.user.apiKey}\r\n\r\n`);
        setTimeout(() => (socket.destroy(), resolve()), ms);
      });
      socket.on('error', () => resolve());
    });

  it('gives back its place in SSE_MAX_STREAMS_PER_KEY', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    const flow = await client(ctx.system, ctx.user.apiKey).post('/workflows', { name: 'f', trigger: { manual: {} }, steps: [{ name: 's', code: 'export default { async run() {} }' }] });
    expect(flow.status).toBe(200);
    const paths = [`/sse/dc/${src}/emits`, `/sse/dc/${src}/observations`, `/sources/${src}/sse`, `/sse/p/${flow.body.data.id}/sse`];
    // Dropped at every moment of the opening, a few at a time (never more than MAX at once: the key may hold those).
    for (let ms = 0; ms < 40; ms += 2) await Promise.all(paths.slice(0, MAX).map((p) => dropAfter(p, ms)));

    const opened = await eventually(async () => {
      const acs = Array.from({ length: MAX }, () => new AbortController());
      const answers = await Promise.all(acs.map((ac, i) => fetch(`${ctx.system.origin}${paths[i % 3]}`, { headers: { authorization: `Bearer ${ctx.user.apiKey}` }, signal: ac.signal })));
      const ok = answers.every((r) => r.status === 200);
      acs.forEach((ac) => ac.abort());
      return ok ? answers.length : undefined;
    }, { what: `${MAX} streams of the key once the dropped ones are gone`, timeoutMs: 15_000 });
    expect(opened).toBe(MAX);
  });
});
