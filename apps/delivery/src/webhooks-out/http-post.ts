import { IncomingHttpHeaders } from 'node:http';
import { AccountSlots, AddressPolicy, GuardedAgent, OutboundError } from '@app/net';

export interface PostResult {
  status: number;
  headers: IncomingHttpHeaders;
  /** At most `maxBodyBytes` of the response body. */
  body: string;
  latencyMs: number;
}

/** Connections kept per receiving host (origin and pool key) at least: its webhooks share them. */
export const SOCKETS_PER_HOST = 64;

export class PostError extends Error {
  constructor(message: string, readonly code: OutboundError['code'], readonly latencyMs: number) {
    super(message);
  }
}

/**
 * The one function that sends a webhook request: a POST through `@app/net`'s undici agent
 * (address policy checked at connect time, after DNS), a per-attempt timeout, no redirects
 * followed, keep-alive connections pooled per origin and pool key. undici rather than node:http: the
 * client is a large part of the delivery app's CPU, and undici's costs less per request.
 */
export class WebhookHttp {
  private readonly agent: GuardedAgent;

  /** `lookupsAtOnce`: per account, past them its connections wait for its own lookups (WEBHOOK_LOOKUPS_AT_ONCE_PER_ACCOUNT). */
  constructor(policy: AddressPolicy, maxSocketsPerHost = SOCKETS_PER_HOST, lookupsAtOnce?: number) {
    this.agent = new GuardedAgent(policy, maxSocketsPerHost, { lookups: lookupsAtOnce ? new AccountSlots(lookupsAtOnce) : undefined });
  }

  /**
   * `pool`: requests of one key share connections, never with another key's, and look names up as its account
   * (`GuardedRequest.poolKey`, `account`).
   */
  async post(url: string, headers: Record<string, string>, body: string, timeoutMs: number, maxBodyBytes = 4096, pool?: { key: string; account: string }): Promise<PostResult> {
    const started = performance.now();
    const elapsed = (): number => Math.round(performance.now() - started);
    try {
      const res = await this.agent.request(url, {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        body,
        timeoutMs,
        maxBodyBytes,
        poolKey: pool?.key,
        account: pool?.account,
      });
      return { status: res.status, headers: res.headers, body: res.body.toString('utf8'), latencyMs: elapsed() };
    } catch (e) {
      const err = e as Error;
      throw new PostError(err.message, err instanceof OutboundError ? err.code : 'network', elapsed());
    }
  }

  /** Closes the pooled connections; a request still in flight fails. */
  close(): Promise<void> {
    return this.agent.close();
  }
}
