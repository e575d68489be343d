import { IncomingHttpHeaders } from 'node:http';
import { AddressPolicy, Agents, createAgents, OutboundError, safeFetch } from '@app/net';

export interface PostResult {
  status: number;
  headers: IncomingHttpHeaders;
  /** At most `maxBodyBytes` of the response body. */
  body: string;
  latencyMs: number;
}

export class PostError extends Error {
  constructor(message: string, readonly code: OutboundError['code'], readonly latencyMs: number) {
    super(message);
  }
}

/**
 * The one function that sends a webhook request: a POST through `@app/net`
 * (address policy checked at connect time, after DNS), a per-attempt timeout,
 * no redirects followed, keep-alive connections shared per process.
 */
export class WebhookHttp {
  private readonly agents: Agents;

  constructor(private readonly policy: AddressPolicy, maxSocketsPerHost = 64) {
    this.agents = createAgents(policy, maxSocketsPerHost);
  }

  async post(url: string, headers: Record<string, string>, body: string, timeoutMs: number, maxBodyBytes = 4096): Promise<PostResult> {
    const started = performance.now();
    const elapsed = (): number => Math.round(performance.now() - started);
    try {
      const res = await safeFetch(url, {
        policy: this.policy,
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        body,
        timeoutMs,
        maxBytes: maxBodyBytes,
        truncate: true,
        maxRedirects: 0,
        agents: this.agents,
      });
      return { status: res.status, headers: res.headers, body: res.body.toString('utf8'), latencyMs: elapsed() };
    } catch (e) {
      const err = e as Error;
      throw new PostError(err.message, err instanceof OutboundError ? err.code : 'network', elapsed());
    }
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
