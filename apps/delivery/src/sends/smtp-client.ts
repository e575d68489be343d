import { connect as netConnect, Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

export interface SmtpServer {
  host: string;
  port: number;
  secure: boolean;
  user?: string;
  password?: string;
}

/** `smtp://[user:password@]host[:port]` (port 25) or `smtps://…` (implicit TLS, port 465). */
export function parseSmtpUrl(raw: string): SmtpServer {
  const u = new URL(raw);
  if (u.protocol !== 'smtp:' && u.protocol !== 'smtps:') throw new Error(`SMTP_URL must be smtp:// or smtps://, got ${u.protocol}`);
  const secure = u.protocol === 'smtps:';
  return { host: u.hostname, port: Number(u.port) || (secure ? 465 : 25), secure, ...(u.username ? { user: decodeURIComponent(u.username), password: decodeURIComponent(u.password) } : {}) };
}

export interface Mail {
  from: string;
  to: string;
  subject: string;
  text?: string;
  html?: string;
}

export class SmtpError extends Error {
  /** 5xx: the server refused for good (retrying will not help). */
  constructor(message: string, readonly permanent: boolean) {
    super(message);
  }
}

/** RFC 5322 message with a quoted-printable-free, base64 body (any UTF-8 text survives every server). */
export function formatMessage(mail: Mail, messageId: string, date = new Date()): string {
  const enc = (s: string): string => (/^[\x20-\x7e]*$/.test(s) ? s : `=?UTF-8?B?${Buffer.from(s, 'utf8').toString('base64')}?=`);
  const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64').replace(/.{76}/g, '$&\r\n');
  const head = [`From: ${mail.from}`, `To: ${mail.to}`, `Subject: ${enc(mail.subject)}`, `Date: ${date.toUTCString()}`, `Message-ID: <${messageId}>`, 'MIME-Version: 1.0'];
  if (mail.text !== undefined && mail.html !== undefined) {
    const boundary = `b_${messageId.replace(/[^A-Za-z0-9]/g, '')}`;
    return [...head, `Content-Type: multipart/alternative; boundary="${boundary}"`, '',
      `--${boundary}`, 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: base64', '', b64(mail.text),
      `--${boundary}`, 'Content-Type: text/html; charset=utf-8', 'Content-Transfer-Encoding: base64', '', b64(mail.html),
      `--${boundary}--`, ''].join('\r\n');
  }
  const html = mail.html !== undefined;
  return [...head, `Content-Type: text/${html ? 'html' : 'plain'}; charset=utf-8`, 'Content-Transfer-Encoding: base64', '', b64((html ? mail.html : mail.text) ?? ''), ''].join('\r\n');
}

/** Reads SMTP replies (multi-line `250-…` until `250 …`). */
class ReplyReader {
  private buffer = '';
  private waiting: ((r: { code: number; text: string }) => void) | undefined;
  private failed: ((e: Error) => void) | undefined;
  private readonly ready: { code: number; text: string }[] = [];

  constructor(socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      this.buffer += d;
      let m: RegExpMatchArray | null;
      while ((m = this.buffer.match(/^((?:\d{3}-[^\r\n]*\r?\n)*)(\d{3})(?: [^\r\n]*)?\r?\n/))) {
        this.buffer = this.buffer.slice(m[0].length);
        this.ready.push({ code: Number(m[2]), text: m[0].trim() });
      }
      this.flush();
    });
    const fail = (e: Error): void => {
      this.failed?.(e);
      this.failed = undefined;
      this.waiting = undefined;
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new SmtpError('the SMTP server closed the connection', false)));
  }

  private flush(): void {
    if (this.waiting && this.ready.length) {
      const w = this.waiting;
      this.waiting = undefined;
      this.failed = undefined;
      w(this.ready.shift() as { code: number; text: string });
    }
  }

  next(): Promise<{ code: number; text: string }> {
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.failed = reject;
      this.flush();
    });
  }
}

/** Sends one message over SMTP (EHLO, optional AUTH PLAIN, MAIL FROM, RCPT TO, DATA). */
export async function sendMail(server: SmtpServer, mail: Mail, messageId: string, timeoutMs: number): Promise<void> {
  const socket: Socket = server.secure ? tlsConnect({ host: server.host, port: server.port, servername: server.host }) : netConnect({ host: server.host, port: server.port });
  socket.setTimeout(timeoutMs, () => socket.destroy(new SmtpError(`SMTP server did not answer within ${timeoutMs} ms`, false)));
  const replies = new ReplyReader(socket);
  const expect = async (ok: number[], what: string): Promise<void> => {
    const r = await replies.next();
    if (!ok.includes(r.code)) throw new SmtpError(`SMTP ${what} refused: ${r.text}`, r.code >= 500);
  };
  const cmd = async (line: string, ok: number[], what: string): Promise<void> => {
    socket.write(`${line}\r\n`);
    await expect(ok, what);
  };
  try {
    await expect([220], 'greeting');
    await cmd('EHLO event-source-service', [250], 'EHLO');
    if (server.user) await cmd(`AUTH PLAIN ${Buffer.from(`\0${server.user}\0${server.password ?? ''}`).toString('base64')}`, [235], 'AUTH');
    await cmd(`MAIL FROM:<${mail.from}>`, [250], 'MAIL FROM');
    await cmd(`RCPT TO:<${mail.to}>`, [250, 251], 'RCPT TO');
    await cmd('DATA', [354], 'DATA');
    const body = formatMessage(mail, messageId).replace(/^\./gm, '..');
    await cmd(`${body}\r\n.`, [250], 'message');
    socket.write('QUIT\r\n');
  } finally {
    socket.end();
    setTimeout(() => socket.destroy(), 1000).unref();
  }
}
