import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '@app/config';
import type { SendMessage } from '@app/contracts';
import { Agents, createAgents, OutboundError, policyFromConfig, safeFetch } from '@app/net';
import { parseSmtpUrl, sendMail, SmtpError } from './smtp-client';
import { s3KeyOf, signS3Put } from './s3-put';

/** A failed attempt: `permanent` ones are not retried (a 4xx, a refused recipient, a bad payload). */
export class SendFailure extends Error {
  constructor(message: string, readonly permanent: boolean) {
    super(message);
  }
}

/** Accounts whose agents are kept at once; past it the least recently used account's go (its idle connections closed). */
const ACCOUNT_AGENTS_MAX = 256;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Performs one send of each kind: HTTP under the address policy, email through SMTP_URL, objects to S3_ENDPOINT. */
export class SendPerformers {
  /** Per account, least recently used first: its lookups and kept-alive connections are its own, never another account's. */
  private readonly agents = new Map<string, Agents>();

  constructor(private readonly config: AppConfig, private readonly em: EntityManager) {}

  perform(msg: SendMessage): Promise<string> {
    if (msg.kind === 'http') return this.http(msg);
    if (msg.kind === 'email') return this.email(msg);
    return this.s3(msg);
  }

  private status(status: number, what: string): string {
    if (status >= 200 && status < 300) return `${what}: ${status}`;
    // Like a webhook: a server error, a timeout or 429 is retried; another client error will not change.
    throw new SendFailure(`${what}: HTTP ${status}`, status >= 400 && status < 500 && status !== 408 && status !== 429);
  }

  private agentsOf(account: string): Agents {
    let agents = this.agents.get(account);
    if (agents) this.agents.delete(account);
    else agents = createAgents(policyFromConfig(this.config), 16, account);
    this.agents.set(account, agents);
    if (this.agents.size > ACCOUNT_AGENTS_MAX) {
      const [oldest, dropped] = this.agents.entries().next().value as [string, Agents];
      this.agents.delete(oldest);
      // Idle ones only: a request in flight finishes on its connection.
      for (const agent of [dropped.http, dropped.https]) for (const idle of Object.values(agent.freeSockets)) for (const socket of idle ?? []) socket.destroy();
    }
    return agents;
  }

  private async fetch(account: string, url: string, method: string, headers: Record<string, string>, body: Buffer | string | undefined, what: string): Promise<string> {
    try {
      const res = await safeFetch(url, { policy: policyFromConfig(this.config), agents: this.agentsOf(account), method, headers, body, timeoutMs: this.config.sendTimeoutMs, maxBytes: 4096, truncate: true, maxRedirects: 5 });
      return this.status(res.status, what);
    } catch (e) {
      if (e instanceof SendFailure) throw e;
      const code = (e as OutboundError).code;
      throw new SendFailure(`${what}: ${(e as Error).message}`, code === 'blocked' || code === 'bad_url' || code === 'too_many_redirects');
    }
  }

  private async http(msg: SendMessage): Promise<string> {
    const p = msg.payload as { url: string; method?: string; headers?: Record<string, unknown>; data?: unknown; body?: unknown; params?: Record<string, unknown> };
    const url = new URL(p.url);
    if (isObject(p.params)) for (const [k, v] of Object.entries(p.params)) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(p.headers ?? {})) headers[k.toLowerCase()] = String(v);
    const raw = p.data !== undefined ? p.data : p.body;
    let body: string | undefined;
    if (typeof raw === 'string') body = raw;
    else if (raw !== undefined) {
      body = JSON.stringify(raw);
      headers['content-type'] ??= 'application/json';
    }
    const method = (p.method ?? 'POST').toUpperCase();
    return this.fetch(msg.ownerId, url.toString(), method, body !== undefined && method !== 'GET' && method !== 'HEAD' ? { ...headers, 'content-length': String(Buffer.byteLength(body)) } : headers, method === 'GET' || method === 'HEAD' ? undefined : body, `$.send.http ${method} ${url.host}`);
  }

  /** Email goes to the workflow owner's address (a user's, or an org's), as Pipedream's `$.send.email` does. */
  private async email(msg: SendMessage): Promise<string> {
    if (!this.config.smtpUrl) throw new SendFailure('SMTP_URL is not configured', true);
    const p = msg.payload as { subject: string; text?: string; html?: string };
    const table = msg.ownerId.startsWith('o_') ? 'orgs' : 'users';
    const [row] = (await this.em.fork().getConnection().execute(`select email from ${table} where id = ?`, [msg.ownerId])) as { email: string }[];
    if (!row?.email) throw new SendFailure(`the owner ${msg.ownerId} has no email address`, true);
    try {
      await sendMail(parseSmtpUrl(this.config.smtpUrl), { from: this.config.smtpFrom, to: row.email, subject: p.subject, text: p.text, html: p.html }, `${msg.invocationId}.${msg.index}@${msg.workflowId}`, this.config.sendTimeoutMs);
      return `$.send.email to ${row.email}`;
    } catch (e) {
      throw new SendFailure(`$.send.email: ${(e as Error).message}`, e instanceof SmtpError && e.permanent);
    }
  }

  private async s3(msg: SendMessage): Promise<string> {
    const { s3Endpoint, s3Region, s3AccessKeyId, s3SecretAccessKey } = this.config;
    if (!s3Endpoint) throw new SendFailure('S3_ENDPOINT is not configured', true);
    const p = msg.payload as { bucket: string; prefix?: string; payload?: unknown };
    const body = Buffer.from(JSON.stringify(p.payload ?? null), 'utf8');
    const key = s3KeyOf(p.prefix ?? '', msg.invocationId, msg.index, msg.createdAtMs);
    const signed = signS3Put({ endpoint: s3Endpoint, region: s3Region, accessKeyId: s3AccessKeyId, secretAccessKey: s3SecretAccessKey }, p.bucket, key, body, 'application/json');
    // The operator's own endpoint: not subject to the address policy that guards user-chosen URLs.
    const res = await fetch(signed.url, { method: 'PUT', headers: signed.headers, body, signal: AbortSignal.timeout(this.config.sendTimeoutMs) }).catch((e: Error) => {
      throw new SendFailure(`$.send.s3 ${p.bucket}/${key}: ${e.message}`, false);
    });
    await res.arrayBuffer().catch(() => undefined);
    return this.status(res.status, `$.send.s3 ${p.bucket}/${key}`);
  }
}
