import { Agent as HttpAgent, IncomingHttpHeaders, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { AddressPolicy, policyForUrl } from './address-policy';
import { guardedLookup, literalHostRefusal, OutboundError } from './outbound-guard';
import { shownUrl } from './shown-url';

export interface Agents {
  http: HttpAgent;
  https: HttpsAgent;
}

/** Keep-alive agents whose every connection goes through the policy's lookup (`account`'s lookups, `guardedLookup`). */
export function createAgents(policy: AddressPolicy, maxSockets = 64, account?: string): Agents {
  const lookup = guardedLookup(policy, { account });
  return {
    http: new HttpAgent({ keepAlive: true, maxSockets, lookup } as ConstructorParameters<typeof HttpAgent>[0]),
    https: new HttpsAgent({ keepAlive: true, maxSockets, lookup } as ConstructorParameters<typeof HttpsAgent>[0]),
  };
}

export interface SafeFetchOptions {
  policy: AddressPolicy;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  timeoutMs: number;
  /** Larger responses are cut off with `too_large` (or truncated when `truncate` is set). */
  maxBytes: number;
  /** Keep only the first `maxBytes` of the body instead of failing. */
  truncate?: boolean;
  /** Redirects to follow (each target checked again); 0 returns the 3xx response itself. */
  maxRedirects?: number;
  agents?: Agents;
  /** Whose lookups a request without `agents` makes (`guardedLookup`); agents have their own. */
  account?: string;
}

export interface SafeResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The URL that answered (after redirects). */
  url: string;
  truncated: boolean;
}

/** Parses and checks a URL: http or https with a host name. */
export function parseHttpUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundError(`"${raw}" is not a valid URL`, 'bad_url');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundError(`URL must use http or https, got ${url.protocol.replace(':', '')}`, 'bad_url');
  if (!url.hostname) throw new OutboundError('URL must include a host name', 'bad_url');
  return url;
}

/** One request, answered in full before `deadline` (epoch ms) or failed with `timeout`. */
function once(url: URL, opts: SafeFetchOptions, deadline: number): Promise<SafeResponse> {
  const refused = literalHostRefusal(url, opts.policy);
  if (refused) return Promise.reject(refused);
  const isHttps = url.protocol === 'https:';
  const request = isHttps ? httpsRequest : httpRequest;
  // A request to one of the platform's ports connects on its own, through a lookup that refuses this machine.
  const policy = policyForUrl(url, opts.policy);
  const agent = opts.agents && policy.platformPort === undefined ? (isHttps ? opts.agents.https : opts.agents.http) : undefined;
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    const fail = (e: Error): void => {
      settle(() => reject(e instanceof OutboundError ? e : new OutboundError(`request to ${url.host} failed: ${e.message}`, 'network')));
      req.destroy();
    };
    const req = request(
      url,
      {
        method: opts.method ?? 'GET',
        headers: opts.headers,
        // Without shared agents, no pooling: each request resolves and connects through the guarded lookup.
        agent: agent ?? false,
        lookup: agent ? undefined : guardedLookup(policy, { account: opts.account }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        const finish = (): void =>
          settle(() => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), url: url.toString(), truncated }));
        res.on('data', (chunk: Buffer) => {
          if (settled) return;
          size += chunk.length;
          if (size <= opts.maxBytes) return void chunks.push(chunk);
          if (!opts.truncate) return fail(new OutboundError(`response from ${url.host} is larger than ${opts.maxBytes} bytes`, 'too_large'));
          chunks.push(chunk.subarray(0, chunk.length - (size - opts.maxBytes)));
          truncated = true;
          finish();
          res.destroy();
        });
        res.on('end', finish);
        res.on('error', fail);
      },
    );
    const timer = setTimeout(() => fail(new OutboundError(`no complete response from ${url.host} within ${opts.timeoutMs} ms`, 'timeout')), Math.max(0, deadline - Date.now()));
    req.on('error', fail);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

/** Headers that carry the caller's credentials: never sent on to another origin a redirect names. */
const CREDENTIALS = new Set(['authorization', 'cookie', 'proxy-authorization']);
/** Headers that describe the body: dropped when a redirect turns the request into a GET. */
const BODY_HEADERS = new Set(['content-length', 'content-type', 'content-encoding', 'transfer-encoding']);

const without = (headers: Record<string, string> | undefined, names: Set<string>): Record<string, string> | undefined =>
  headers && Object.fromEntries(Object.entries(headers).filter(([k]) => !names.has(k.toLowerCase())));

/**
 * The request a redirect makes, as `fetch` does it: 303 (and 301/302 after a POST) becomes a GET
 * without a body; another origin does not get the caller's credentials (whoever answered chose it).
 */
function redirected(from: URL, to: URL, status: number, opts: SafeFetchOptions): SafeFetchOptions {
  let next = opts;
  const method = (opts.method ?? 'GET').toUpperCase();
  if ((status === 303 && method !== 'GET' && method !== 'HEAD') || ((status === 301 || status === 302) && method === 'POST')) {
    next = { ...next, method: 'GET', body: undefined, headers: without(next.headers, BODY_HEADERS) };
  }
  if (to.origin !== from.origin) next = { ...next, headers: without(next.headers, CREDENTIALS) };
  return next;
}

/**
 * An HTTP(S) request under the outbound address policy, with a whole-request
 * timeout (all its redirects together), a response size cap and bounded redirects (each hop checked again).
 */
export async function safeFetch(raw: string, opts: SafeFetchOptions): Promise<SafeResponse> {
  let url = parseHttpUrl(raw);
  let hopOpts = opts;
  const maxRedirects = opts.maxRedirects ?? 0;
  const deadline = Date.now() + opts.timeoutMs;
  for (let hop = 0; ; hop++) {
    const res = await once(url, hopOpts, deadline);
    const location = res.headers.location;
    if (res.status < 300 || res.status >= 400 || !location || maxRedirects === 0) return res;
    if (hop >= maxRedirects) throw new OutboundError(`more than ${maxRedirects} redirects from ${shownUrl(raw)}`, 'too_many_redirects');
    const next = parseHttpUrl(new URL(location, url).toString());
    hopOpts = redirected(url, next, res.status, hopOpts);
    url = next;
  }
}
