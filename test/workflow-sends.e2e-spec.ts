import { createHash, createHmac } from 'node:crypto';
import { createServer as createHttpServer, IncomingMessage, Server } from 'node:http';
import { connect as tcpConnect, createServer as createTcpServer, Server as TcpServer, Socket } from 'node:net';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';
import { openText } from './support/sse-stream';
import { sql } from './events.helpers';

/**
 * `$.send.http`, `$.send.email` and `$.send.s3` after a successful run, against
 * real local servers started here: an HTTP receiver (its first answer a 503, so
 * the send is retried), an SMTP server speaking the protocol over node:net, and
 * an S3-compatible endpoint that checks each request's Signature Version 4.
 * A failed run sends nothing.
 */
interface Mail {
  auth?: string;
  from?: string;
  to?: string;
  data: string;
}

function smtpServer(mails: Mail[]): TcpServer {
  return createTcpServer((socket: Socket) => {
    const mail: Mail = { data: '' };
    let inData = false;
    let buffer = '';
    socket.write('220 test ESMTP\r\n');
    socket.on('data', (d: Buffer) => {
      buffer += d.toString('utf8');
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          mail.data = buffer.slice(0, end);
          buffer = buffer.slice(end + 5);
          inData = false;
          mails.push(mail);
          socket.write('250 queued\r\n');
          continue;
        }
        const nl = buffer.indexOf('\r\n');
        if (nl < 0) return;
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 2);
        if (/^EHLO/i.test(line)) socket.write('250-test\r\n250 AUTH PLAIN\r\n');
        else if (/^AUTH PLAIN /i.test(line)) {
          mail.auth = Buffer.from(line.slice(11), 'base64').toString('utf8');
          socket.write('235 ok\r\n');
        } else if (/^MAIL FROM:/i.test(line)) {
          mail.from = line.slice(10).replace(/[<>]/g, '');
          socket.write('250 ok\r\n');
        } else if (/^RCPT TO:/i.test(line)) {
          mail.to = line.slice(8).replace(/[<>]/g, '');
          socket.write('250 ok\r\n');
        } else if (/^DATA/i.test(line)) {
          inData = true;
          socket.write('354 go\r\n');
        } else if (/^QUIT/i.test(line)) socket.end('221 bye\r\n');
        else socket.write('500 unknown\r\n');
      }
    });
    socket.on('error', () => undefined);
  });
}

/** Checks an S3 PUT's SigV4 signature (path-style) as an S3 server does; the body's hash must match too. */
function validSignature(req: IncomingMessage, body: Buffer, secret: string, region: string): boolean {
  const auth = String(req.headers.authorization ?? '');
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m || m[3] !== region) return false;
  const payloadHash = createHash('sha256').update(body).digest('hex');
  if (req.headers['x-amz-content-sha256'] !== payloadHash) return false;
  const signed = m[4].split(';');
  const canonical = ['PUT', (req.url ?? '').split('?')[0], '', ...signed.map((h) => `${h}:${String(req.headers[h]).trim()}`), '', m[4], payloadHash].join('\n');
  const amzDate = String(req.headers['x-amz-date']);
  const scope = `${m[2]}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  let key: Buffer = createHmac('sha256', `AWS4${secret}`).update(m[2]).digest();
  for (const part of [region, 's3', 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  return createHmac('sha256', key).update(toSign).digest('hex') === m[5];
}

const SENDER = `export default defineComponent({
  async run({ steps, $ }) {
    const e = steps.trigger.event;
    if (e.fail) throw new Error("no sends from a failed run");
    $.send.http({ method: "POST", url: e.url, headers: { "x-order": String(e.order) }, data: { order: e.order } });
    $.send.email({ subject: "Order " + e.order + " ✓", text: "Thanks for order " + e.order });
    $.send.s3({ bucket: "orders", prefix: "in/", payload: { order: e.order } });
  },
});`;

describe('workflow sends', () => {
  let system: System;
  let user: TestUser;
  let http: Server;
  let s3: Server;
  let smtp: TcpServer;
  const hits: { headers: IncomingMessage['headers']; body: string }[] = [];
  const mails: Mail[] = [];
  const objects: { path: string; body: string; valid: boolean }[] = [];
  let httpUrl = '';
  let attempts = 0;

  const listen = async (srv: Server | TcpServer): Promise<number> => {
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    return (srv.address() as { port: number }).port;
  };

  beforeAll(async () => {
    http = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        // The first attempt fails: the send must be retried.
        if (attempts++ === 0) return void res.writeHead(503).end();
        hits.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(200).end('ok');
      });
    });
    s3 = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const valid = req.method === 'PUT' && validSignature(req, body, 'test-secret', 'eu-test-1');
        objects.push({ path: req.url ?? '', body: body.toString('utf8'), valid });
        res.writeHead(valid ? 200 : 403).end();
      });
    });
    smtp = smtpServer(mails);
    httpUrl = `http://127.0.0.1:${await listen(http)}/in`;
    const s3Port = await listen(s3);
    const smtpPort = await listen(smtp);
    system = await startSystem({
      WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s',
      SMTP_URL: `smtp://mailer:p%40ss@127.0.0.1:${smtpPort}`,
      SMTP_FROM: 'workflows@example.test',
      S3_ENDPOINT: `http://127.0.0.1:${s3Port}`,
      S3_REGION: 'eu-test-1',
      S3_ACCESS_KEY_ID: 'test-key',
      S3_SECRET_ACCESS_KEY: 'test-secret',
    });
    user = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
    await Promise.all([http, s3, smtp].map((s) => new Promise((r) => s?.close(r))));
  });

  it('sends HTTP (retried after a 503), email and S3 after the run succeeded, and nothing for a failed run', async () => {
    const api = client(system, user.apiKey);
    const wf = (await api.post('/workflows', { name: 'sender', trigger: { manual: {} }, steps: [{ name: 'send', code: SENDER }] })).body.data;
    expect((await api.post(`/workflows/${wf.id}/run`, { event: { fail: true, order: 0, url: httpUrl } })).status).toBe(202);
    expect((await api.post(`/workflows/${wf.id}/run`, { event: { order: 42, url: httpUrl } })).status).toBe(202);

    await eventually(async () => hits.length === 1, { what: 'the HTTP send after its retry', timeoutMs: 30_000 });
    expect(attempts).toBe(2);
    expect(hits[0].headers['x-order']).toBe('42');
    expect(hits[0].headers['content-type']).toBe('application/json');
    expect(JSON.parse(hits[0].body)).toEqual({ order: 42 });

    const [mail] = await eventually(async () => (mails.length ? mails : undefined), { what: 'the email' });
    expect(mail.auth).toBe('\0mailer\0p@ss');
    expect(mail.from).toBe('workflows@example.test');
    expect(mail.to).toBe((await api.get("/users/me")).body.data.email);
    expect(mail.data).toContain(`Subject: =?UTF-8?B?${Buffer.from('Order 42 ✓').toString('base64')}?=`);
    const body = mail.data.split('\r\n\r\n')[1].replace(/\r\n/g, '');
    expect(Buffer.from(body, 'base64').toString('utf8')).toBe('Thanks for order 42');

    const [object] = await eventually(async () => (objects.length ? objects : undefined), { what: 'the S3 object' });
    expect(object.valid).toBe(true);
    expect(object.path).toMatch(/^\/orders\/in\/\d{4}\/\d\d\/\d\d\/\d\d\/\d+-inv_[a-z0-9]+-2\.json$/);
    expect(JSON.parse(object.body)).toEqual({ order: 42 });

    // The failed run (order 0) sent nothing, and nothing was sent twice.
    await new Promise((r) => setTimeout(r, 1500));
    expect([hits.length, mails.length, objects.length]).toEqual([1, 1, 1]);
  });

  it('fails the step when a send is malformed', async () => {
    const api = client(system, user.apiKey);
    const code = 'export default defineComponent({ async run({ $ }) { $.send.http({ method: "POST" }); } });';
    const wf = (await api.post('/workflows', { name: 'bad-send', trigger: { manual: {} }, steps: [{ name: 'send', code }] })).body.data;
    await api.post(`/workflows/${wf.id}/run`, { event: {} });
    const errs = await eventually(async () => {
      const list = (await api.get(`/workflows/${wf.id}/$errors/event_summaries?expand=event`)).body.data;
      return list.length ? list : undefined;
    });
    expect(errs[0].event.error).toEqual(expect.objectContaining({ code: 'SendError', stack: expect.stringContaining('$.send.http() needs { url') }));
    // A header the request could not carry is malformed too: the step fails, instead of a send retried for hours.
    const badHeader = 'export default defineComponent({ async run({ $ }) { $.send.http({ url: "https://example.com/x", headers: { "bad header": "x" } }); } });';
    const wf2 = (await api.post('/workflows', { name: 'bad-header', trigger: { manual: {} }, steps: [{ name: 'send', code: badHeader }] })).body.data;
    await api.post(`/workflows/${wf2.id}/run`, { event: {} });
    const errs2 = await eventually(async () => (await api.get(`/workflows/${wf2.id}/$errors/event_summaries?expand=event`)).body.data?.[0], { what: 'the $errors event' });
    expect(errs2.event.error).toEqual(expect.objectContaining({ code: 'SendError', stack: 'SendError: $.send.http(): header name "bad header" is not an HTTP token' }));
    // The call is checked when its step ends, not by the call: a try/catch around it catches nothing, the step fails.
    const caught = 'export default defineComponent({ async run({ $ }) { try { $.send.http({ url: "not a url" }); } catch (e) { $.export("caught", String(e)); } return "went on"; } });';
    const wf3 = (await api.post('/workflows', { name: 'caught-send', trigger: { manual: {} }, steps: [{ name: 'send', code: caught }] })).body.data;
    await api.post(`/workflows/${wf3.id}/run`, { event: {} });
    const [run] = await eventually(async () => {
      const runs = (await api.get(`/workflows/${wf3.id}/runs`)).body.data;
      return runs?.length ? runs : undefined;
    }, { what: 'the run record' });
    expect(run).toEqual(expect.objectContaining({ status: 'error', failed_step: 'send' }));
    expect(run.steps[0].error).toEqual({ name: 'SendError', message: '$.send.http(): url is not a URL: not a url' });
    expect(run.steps[0].exports?.caught).toBeUndefined();
  });

  it('streams $.send.sse events and emits of a workflow over server-sent events', async () => {
    const api = client(system, user.apiKey);
    const code = 'export default defineComponent({ async run({ steps, $ }) { $.send.sse({ channel: "orders", payload: { n: steps.trigger.event.n } }); $.send.emit({ raw_event: { n: steps.trigger.event.n } }); } });';
    const wf = (await api.post('/workflows', { name: 'sse', trigger: { manual: {} }, steps: [{ name: 'send', code }] })).body.data;
    const open = async (kind: string) => {
      const stream = await openText(system, `/sse/p/${wf.id}/${kind}`, user.apiKey);
      expect(stream.status).toBe(200);
      return stream;
    };
    const live = await open('sse');
    const emits = await open('emits');
    await eventually(async () => live.text().includes(':sse-handshake') && emits.text().includes(':sse-handshake'));
    await api.post(`/workflows/${wf.id}/run`, { event: { n: 5 } });
    try {
      await eventually(async () => live.text().includes('event: orders\ndata: {"n":5}'), { what: 'the $.send.sse message' });
      await eventually(async () => emits.text().includes('"raw_event":{"n":5}'), { what: 'the emit on the SSE stream' });
    } finally {
      live.close();
      emits.close();
    }
    expect((await fetch(`${system.origin}/sse/p/p_unknown/sse`, { headers: { authorization: `Bearer ${user.apiKey}` } })).status).toBe(404);
  });

  it('holds at most 2 MiB for a reader of $.send.sse that does not read: it misses what comes meanwhile, and is told how much', async () => {
    const api = client(system, user.apiKey);
    // 100 sends of 400 KB: 40 MB the api held for each paused reader (64 streams a key).
    const code = 'export default defineComponent({ async run({ $ }) { const s = "q".repeat(400000); for (let i = 0; i < 100; i++) $.send.sse({ channel: "c", payload: s + i }); } });';
    const wf = (await api.post('/workflows', { name: 'sse-burst', trigger: { manual: {} }, steps: [{ name: 'send', code }] })).body.data;
    const url = new URL(`${system.origin}/sse/p/${wf.id}/sse`);
    const socket = tcpConnect(Number(url.port), url.hostname);
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${user.apiKey}\r\n\r\n`);
    // A reader that reads: once it has had every send, or been told it missed it (on a loaded machine it falls behind
    // too, and may miss the last ones), the api has handled every one for the paused reader too.
    const reading = await openText(system, url.pathname, user.apiKey);
    const handled = (t: string): number => (t.match(/\nevent: c\n/g)?.length ?? 0) + [...t.matchAll(/: (\d+) messages dropped: the reader fell behind/g)].reduce((n, m) => n + Number(m[1]), 0);
    try {
      await eventually(async () => text.includes(':sse-handshake') && reading.text().includes(':sse-handshake'), { what: 'the streams to open' });
      socket.pause();
      expect((await api.post(`/workflows/${wf.id}/run`, {})).status).toBe(202);
      await eventually(async () => handled(reading.text()) === 100, { what: 'every send at the reader that reads', timeoutMs: 60_000, intervalMs: 250 });
      socket.resume();
      await eventually(async () => text.includes('messages dropped: the reader fell behind'), { what: 'the notice of the dropped messages', timeoutMs: 15_000 });
    } finally {
      socket.destroy();
      reading.close();
    }
    const received = text.match(/\nevent: c\n/g)?.length ?? 0;
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(100);
    const dropped = Number(/: (\d+) messages dropped: the reader fell behind/.exec(text)?.[1]);
    expect(received + dropped).toBeLessThanOrEqual(100);
  });

  it("drops a deleted workflow's sends: none is attempted again, none waits for its next attempt", async () => {
    const api = client(system, user.apiKey);
    const tries: string[] = [];
    const down = createHttpServer((req, res) => {
      tries.push(String(req.headers['x-order']));
      res.writeHead(503).end();
    });
    const port = await listen(down);
    try {
      const code = 'export default defineComponent({ async run({ steps, $ }) { $.send.http({ method: "POST", url: steps.trigger.event.url, headers: { "x-order": "7" }, data: {} }); } });';
      const wf = (await api.post('/workflows', { name: 'sender-to-delete', trigger: { manual: {} }, steps: [{ name: 'send', code }] })).body.data;
      expect((await api.post(`/workflows/${wf.id}/run`, { event: { url: `http://127.0.0.1:${port}/in` } })).status).toBe(202);
      await eventually(async () => tries.length >= 1, { what: 'the first attempt', timeoutMs: 30_000 });
      expect((await api.del(`/workflows/${wf.id}`)).status).toBe(204);
      const seen = tries.length;
      // WEBHOOK_RETRY_SCHEDULE is 1s,1s,1s: three more attempts would have come by now.
      await new Promise((r) => setTimeout(r, 5_000));
      expect(tries.length - seen).toBeLessThanOrEqual(1); // at most one attempt that had already begun
      const waiting = await sql<{ n: string }>(system, `select count(*) as n from send_retries where message->>'workflowId' = $1`, [wf.id]);
      expect(Number(waiting[0].n)).toBe(0);
    } finally {
      await new Promise((r) => down.close(r));
    }
  });
});
