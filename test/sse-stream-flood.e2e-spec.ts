import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * One tenant against the api's event streams. A stream is not a request (API_MAX_CONCURRENT_PER_KEY
 * does not count it) and each one holds a socket of the api (20,000 descriptors here, shared by every
 * tenant and the api's Postgres and NATS connections), an ordered JetStream consumer on the NATS
 * server and a Postgres check every SSE_KEEPALIVE_MS for as long as it stays open: one key opened as
 * many as it liked. Now a key holds at most SSE_MAX_STREAMS_PER_KEY; another tenant still gets theirs.
 */
describe('event streams of one API key', () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;
  const open: AbortController[] = [];

  const source = async (u: TestUser): Promise<string> => {
    const res = await client(system, u.apiKey).post('/sources', { component_code: 'module.exports = { name: "s", version: "1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };' });
    expect(res.status).toBe(200);
    return res.body.data.id;
  };
  /** Opens a stream and leaves it open; answers its status (and the error body of a refusal, or the open response). */
  const stream = async (u: TestUser, path: string): Promise<{ status: number; body?: { code: string; error: string }; res?: Response }> => {
    const ac = new AbortController();
    open.push(ac);
    const res = await fetch(`${system.origin}${path}`, { headers: { authorization: `Bearer ${u.apiKey}` }, signal: ac.signal });
    if (res.status === 200) return { status: 200, res };
    return { status: res.status, body: (await res.json()) as { code: string; error: string } };
  };
  /** Whether a stream is still open: it keeps sending its keep-alive (every 500 ms) for 1.5 s without ending. */
  const stillOpen = async (res: Response): Promise<boolean> => {
    const reader = res.body!.getReader();
    const until = Date.now() + 1500;
    while (Date.now() < until) {
      const next = await Promise.race([reader.read(), new Promise<'wait'>((r) => setTimeout(() => r('wait'), until - Date.now()))]);
      if (next !== 'wait' && next.done) return false;
    }
    return true;
  };
  const closeAll = () => open.splice(0).forEach((ac) => ac.abort());

  beforeAll(async () => {
    system = await startSystem({ SSE_MAX_STREAMS_PER_KEY: '20', SSE_KEEPALIVE_MS: '500' }, { apps: ['api'] });
    a = createUser(system);
    b = createUser(system);
  });
  afterAll(async () => {
    closeAll();
    await system?.stop();
  });

  it('holds a key to SSE_MAX_STREAMS_PER_KEY open streams; another key still opens its own; a closed stream frees its place', async () => {
    const mine = await source(a);
    const paths = [`/sse/dc/${mine}/emits`, `/sse/dc/${mine}/observations`, `/sources/${mine}/sse`];
    const answers = await Promise.all(Array.from({ length: 150 }, (_, i) => stream(a, paths[i % paths.length])));
    // At most 20 open at any moment: a stream the server ended (its consumer stopped) gives its place to another.
    const admitted = answers.filter((x) => x.status === 200);
    const openNow = (await Promise.all(admitted.map((x) => stillOpen(x.res!)))).filter(Boolean).length;
    expect(admitted.length).toBeGreaterThanOrEqual(20);
    expect(openNow).toBeLessThanOrEqual(20);
    const refused = answers.filter((x) => x.status !== 200);
    expect(new Set(refused.map((x) => x.status))).toEqual(new Set([429]));
    expect(refused[0].body).toEqual(expect.objectContaining({ code: 'rate_limited', error: expect.stringMatching(/SSE_MAX_STREAMS_PER_KEY/) }));
    // Workflow streams count against the same key.
    const flow = await client(system, a.apiKey).post('/workflows', { name: 'f', trigger: { manual: {} }, steps: [{ name: 's', code: 'export default { async run() {} }' }] });
    expect((await stream(a, `/sse/p/${flow.body.data.id}/emits`)).status).toBe(429);

    // B is not held back by A's streams.
    const theirs = await source(b);
    expect((await stream(b, `/sse/dc/${theirs}/emits`)).status).toBe(200);

    // A's streams end: its places come back.
    closeAll();
    await eventually(async () => (await stream(a, `/sse/dc/${mine}/emits`)).status === 200, { what: 'a stream after the others closed', timeoutMs: 10_000 });
    expect((await fetch(`${system.origin}/healthz`)).status).toBe(200);
  });
});
