import { IncomingHttpHeaders } from 'node:http';
import { Agent, Dispatcher } from 'undici';
import { AddressPolicy, policyForUrl } from './address-policy';
import { incomingHeaders } from './incoming-headers';
import { guardedLookup, literalHostRefusal, LookupScope, OutboundError } from './outbound-guard';
import { parseHttpUrl, SafeResponse } from './safe-fetch';

export interface GuardedRequest {
  method: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** For the whole attempt: connecting, sending and reading the response. */
  timeoutMs: number;
  /** The body is cut to this many bytes (`truncated`), never failed for its size. */
  maxBodyBytes: number;
  /**
   * Requests with a pool key have connections of their own (`connectionsPerOrigin` per origin and key), so
   * callers of one origin never wait on each other's connections: a webhook whose receiver hangs holds only
   * its own. Without one, the shared pool.
   */
  poolKey?: string;
  /** Whose lookups a keyed pool's connections make (`guardedLookup`); the shared pool's are the platform's. */
  account?: string;
}

/** A keyed pool not used for this long (nothing in flight) is closed. */
const KEYED_IDLE_MS = 60_000;

interface KeyedPool {
  agent: Agent;
  busy: number;
  usedMs: number;
}

/**
 * An undici agent under the outbound address policy: every connection (http and https) resolves
 * through the policy's lookup, literal IP hosts are checked before connecting, keep-alive
 * connections are pooled per origin. Redirects are never followed: a 3xx is the response.
 */
export class GuardedAgent {
  private readonly agent: Agent;
  /** Agents of requests to the platform's own ports (`AddressPolicy.platformPorts`), one per port: their lookups refuse this machine. */
  private readonly platformAgents = new Map<number, Agent>();
  private readonly keyed = new Map<string, KeyedPool>();
  private sweeper?: NodeJS.Timeout;

  /** `scope`: the keyed pools' lookups, each as its request's `account` (`lookups`: bound per account). */
  constructor(private readonly policy: AddressPolicy, private readonly connectionsPerOrigin = 64, private readonly scope: Omit<LookupScope, 'account'> = {}) {
    this.agent = this.newAgent(policy);
  }

  request(raw: string, req: GuardedRequest): Promise<SafeResponse> {
    return new Promise((resolve, reject) => {
      const url = parseHttpUrl(raw);
      const refused = literalHostRefusal(url, this.policy);
      if (refused) return reject(refused);
      const policy = policyForUrl(url, this.policy);
      const pool = policy.platformPort === undefined && req.poolKey !== undefined ? this.keyedPool(req.poolKey, req.account) : undefined;
      const done = (): void => {
        if (!pool) return;
        pool.busy--;
        pool.usedMs = Date.now();
      };
      const handler = new CappedResponse(url, req, (r) => (done(), resolve(r)), (e) => (done(), reject(e)));
      const agent = pool?.agent ?? this.agentFor(policy);
      try {
        agent.dispatch({ origin: url.origin, path: url.pathname + url.search, method: req.method as Dispatcher.HttpMethod, headers: withUserinfo(url, req.headers), body: req.body }, handler);
      } catch (e) {
        handler.onError(e as Error);
      }
    });
  }

  private newAgent(policy: AddressPolicy, account?: string): Agent {
    const scope = account === undefined ? { resolver: this.scope.resolver } : { ...this.scope, account };
    return new Agent({ connections: this.connectionsPerOrigin, connect: { lookup: guardedLookup(policy, scope) } });
  }

  private agentFor(policy: AddressPolicy): Agent {
    if (policy.platformPort === undefined) return this.agent;
    let agent = this.platformAgents.get(policy.platformPort);
    if (!agent) this.platformAgents.set(policy.platformPort, (agent = this.newAgent(policy)));
    return agent;
  }

  /** The pool of `poolKey` and `account` (a webhook moved to another account gets a new one). */
  private keyedPool(poolKey: string, account: string | undefined): KeyedPool {
    const key = `${poolKey}\n${account ?? ''}`;
    let pool = this.keyed.get(key);
    if (!pool) {
      this.keyed.set(key, (pool = { agent: this.newAgent(this.policy, account), busy: 0, usedMs: Date.now() }));
      this.sweeper ??= setInterval(() => this.sweep(), KEYED_IDLE_MS / 2).unref();
    }
    pool.busy++;
    return pool;
  }

  /** Closes the keyed pools nothing used for KEYED_IDLE_MS. */
  private sweep(): void {
    const now = Date.now();
    for (const [key, pool] of this.keyed) {
      if (pool.busy > 0 || now - pool.usedMs < KEYED_IDLE_MS) continue;
      this.keyed.delete(key);
      void pool.agent.close().catch(() => undefined);
    }
  }

  /** Closes the agents; requests still in flight fail. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const keyed = [...this.keyed.values()].map((p) => p.agent);
    this.keyed.clear();
    await Promise.all([this.agent, ...this.platformAgents.values(), ...keyed].map((a) => a.destroy()));
  }
}

/** Credentials in the URL become Basic authorization, as node:http sends them. */
function withUserinfo(url: URL, headers: Record<string, string>): Record<string, string> {
  if (!url.username && !url.password) return headers;
  if (Object.keys(headers).some((k) => k.toLowerCase() === 'authorization')) return headers;
  const auth = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  return { ...headers, authorization: `Basic ${Buffer.from(auth).toString('base64')}` };
}

/** Collects one response: the status, node:http-shaped headers and at most `maxBodyBytes` of the body, within the timeout. */
class CappedResponse implements Dispatcher.DispatchHandlers {
  private abort?: (err?: Error) => void;
  private settled = false;
  private status = 0;
  private headers: IncomingHttpHeaders = {};
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly url: URL, private readonly req: GuardedRequest, private readonly resolve: (r: SafeResponse) => void, private readonly reject: (e: Error) => void) {
    this.timer = setTimeout(() => {
      this.fail(new OutboundError(`no complete response from ${url.host} within ${req.timeoutMs} ms`, 'timeout'));
      this.abort?.();
    }, req.timeoutMs);
  }

  onConnect(abort: (err?: Error) => void): void {
    // Timed out while waiting for a connection. Throwing here drops the request before it is written and
    // keeps the connection pooled (undici makes it the request's error); `abort` would close the connection.
    if (this.settled) throw new OutboundError('timed out before it was sent', 'timeout');
    this.abort = abort;
  }

  onHeaders(status: number, raw: Buffer[]): boolean {
    if (status < 200) return true; // 1xx informational: the final response follows
    this.status = status;
    this.headers = incomingHeaders(raw);
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.settled) return true;
    this.size += chunk.length;
    if (this.size <= this.req.maxBodyBytes) {
      this.chunks.push(chunk);
      return true;
    }
    this.chunks.push(chunk.subarray(0, chunk.length - (this.size - this.req.maxBodyBytes)));
    this.finish(true);
    // Not from inside the parser's callback; a response that completes in the same read keeps its connection.
    queueMicrotask(() => this.abort?.());
    return true;
  }

  onComplete(): void {
    this.finish(false);
  }

  onError(err: Error): void {
    this.fail(err instanceof OutboundError ? err : new OutboundError(`request to ${this.url.host} failed: ${err.message}`, 'network'));
  }

  private finish(truncated: boolean): void {
    if (this.settle()) this.resolve({ status: this.status, headers: this.headers, body: Buffer.concat(this.chunks), url: this.url.toString(), truncated });
  }

  private fail(err: OutboundError): void {
    if (this.settle()) this.reject(err);
  }

  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    clearTimeout(this.timer);
    return true;
  }
}
