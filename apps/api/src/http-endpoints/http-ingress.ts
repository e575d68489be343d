import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { APP_CONFIG, AppConfig, trustProxyFunction } from '@app/config';
import {
  ApiError,
  assertChunkedOnly,
  clipped,
  decodeHttpBody,
  decodeJson,
  encodeJson,
  FRAMING_HEADERS,
  HTTP_BODY_MAX_JSON_DEPTH,
  HttpEvent,
  HttpResponseMessage,
  InvocationMessage,
  isJsonContentType,
  jsonTextProblem,
  newId,
  packHttpEvent,
  parseHttpBody,
  randomToken,
  ServiceUnavailableError,
} from '@app/contracts';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Subscription } from 'nats';
import { NatsService } from '@app/nats';
import { checkedResponse, responseHeadersProblem } from '@app/sandbox';
import { LaneFullError } from '../common/bounded-lane';
import { EndpointLookup, EndpointTarget } from './endpoint-lookup';
import { describeRefusal, InvocationBacklog } from './invocation-backlog';
import { RateLimiter } from './rate-limiter';
import { IngestBatches } from './ingest-batches';
import { endpointKeyOfHost, endpointUrlOf } from './endpoint-urls';
import { installBodyBudget } from './body-budget';
import { installIngressFastPath } from './ingress-fast-path';
import { endpointMethods } from './endpoint-methods';
import { scopeSetCookies } from './endpoint-cookies';
import { dependencyError, describeCause } from '../common/dependency-errors';
import { onReplicaChange } from '../common/replica-changes';
import { keepConnectionToDrain, tooLargeDetails } from '../common/body-too-large';
import { keepsContentType, relaysComponentAnswer } from '../common/response-headers';

/**
 * Headers that would act on the whole origin (host) the dashboard and every endpoint share, not on the one answer:
 * a service worker over `/`, wiping its storage, HSTS for the host and its subdomains, an alternative service the
 * browser would use for every later request to the host, Network Error Logging (with `Report-To`: the browser
 * reports every request to the origin — other users' URLs, addresses, timings — to a collector of the tenant's),
 * client hints the browser keeps sending to the origin.
 */
const ORIGIN_WIDE = new Set(['service-worker-allowed', 'clear-site-data', 'strict-transport-security', 'alt-svc', 'nel', 'report-to', 'accept-ch', 'critical-ch', 'origin-agent-cluster']);
/**
 * Every answer of `/e/…` is tenant content served from the dashboard's origin (unless ENDPOINT_DOMAIN gives
 * each endpoint its own): a browser shows it in an opaque origin, so its scripts can still run but cannot
 * read the dashboard's sessionStorage (the API key), register a service worker or call the API as the page.
 */
export const ENDPOINT_SANDBOX_CSP = 'sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads';

/**
 * The HTTP interface of sources: `ANY /e/<endpoint_key>[/*]` (public, no API key).
 * Registered straight on Fastify in its own encapsulated context so the body
 * arrives raw whatever its type. The request becomes an invocation stored in
 * JetStream before any answer (with the other requests to its source in the same
 * turn: IngestBatches); `customResponse` endpoints wait for `respond()`.
 */
@Injectable()
export class HttpIngress implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('HttpIngress');
  private readonly limiter: RateLimiter;
  /** Reply subjects of this replica are `resp.<token>.<invocationId>`. */
  private readonly replicaToken = randomToken(12);
  /** Callers waiting for `respond()`, by invocation id; `null` answers the timeout, `'deleted'` the source's deletion. */
  private readonly waiting = new Map<string, { sourceId: string; resolve: (r: HttpResponseMessage | Unrelayable | null | 'deleted') => void }>();
  private replies: Subscription | undefined;
  /** Shutting down: the fast path leaves every request to Fastify (which answers 503 once it closes). */
  private closing = false;
  private readonly trustedProxy: (address: string, hop: number) => boolean;
  /** Requests answered, by the way they came in: the fast path (ingress-fast-path.ts) or Fastify's route. */
  readonly served = { fast: 0, route: 0 };
  private unsubscribeDeleted: (() => void) | undefined;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly lookup: EndpointLookup,
    private readonly nats: NatsService,
    private readonly backlog: InvocationBacklog,
    private readonly batches: IngestBatches,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.limiter = new RateLimiter(config.httpRatePerSec, config.httpBurst);
    this.trustedProxy = trustProxyFunction(config.trustProxy);
  }

  /** Whether the peer of a connection is a proxy TRUST_PROXY names (whose forwarded headers are believed). */
  private fromProxy(address: string | undefined): boolean {
    return address !== undefined && this.trustedProxy(address, 0);
  }

  onModuleDestroy(): void {
    this.closing = true;
    this.replies?.unsubscribe();
    this.unsubscribeDeleted?.();
  }

  onModuleInit(): void {
    // A source or workflow deleted (on any replica) while callers wait for its respond(): it never will; they are told at once.
    this.unsubscribeDeleted = onReplicaChange(this.nats, 'deleted', (id) => {
      for (const w of this.waiting.values()) if (w.sourceId === id) w.resolve('deleted');
    });
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    void fastify.register(async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: this.config.httpMaxBodyBytes }, (_req, body, done) => done(null, body));
      // Every body is read as bytes, whatever its type: Fastify sees one it reads (it refused a Content-Type that is no
      // media type, `json` or an empty one, with a 415), and the handler restores the header as sent (sentContentType).
      scope.addHook('onRequest', (req, _reply, done) => {
        const sent = req.headers['content-type'];
        if (sent !== undefined) {
          sentContentTypes.set(req.raw, sent);
          req.headers['content-type'] = 'application/octet-stream';
        }
        done();
      });
      scope.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
        keepConnectionToDrain(err, req, reply);
        if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return reply.status(413).send({ error: `request body is larger than ${this.config.httpMaxBodyBytes} bytes`, code: 'payload_too_large', details: tooLargeDetails(req, this.config.httpMaxBodyBytes) });
        return this.send(reply, this.errorAnswer(err));
      });
      const handler = (req: FastifyRequest, reply: FastifyReply): Promise<unknown> => this.handle(req, reply);
      const route = { method: endpointMethods(fastify), bodyLimit: this.config.httpMaxBodyBytes, handler };
      scope.route({ ...route, url: '/e/:endpointKey' });
      scope.route({ ...route, url: '/e/:endpointKey/*' });
    });
    if (this.config.ingressFastPath) installIngressFastPath(fastify.server, this, { maxBodyBytes: this.config.httpMaxBodyBytes, endpointDomain: this.config.endpointDomain, trustProxy: this.config.trustProxy });
    // Around whatever serves the requests (the fast path or Fastify): no body is read past the replica's budget.
    installBodyBudget(fastify.server, { maxBytes: this.config.httpBodyBytesInFlight, maxBodyBytes: this.config.httpMaxBodyBytes, endpointDomain: this.config.endpointDomain, trusted: (address) => this.trustedProxy(address, 0) });
  }

  /**
   * The endpoint a request to `/e/<endpointKey>` reaches, when the lookup's cache knows it (no wait for Postgres), it
   * is active and it answers `{ success: true }` once a request is stored (no custom response): what the fast path
   * serves (ingress-fast-path.ts).
   */
  plainTarget(endpointKey: string): EndpointTarget | undefined {
    if (this.closing) return undefined;
    const target = this.lookup.find(endpointKey);
    return target && !(target instanceof Promise) && target.active && !target.customResponse ? target : undefined;
  }

  private async handle(req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const { endpointKey } = req.params as { endpointKey: string };
    this.served.route++;
    if (sentContentTypes.has(req.raw)) req.headers['content-type'] = sentContentTypes.get(req.raw);
    let target: EndpointTarget | null;
    try {
      target = await this.lookup.find(endpointKey);
    } catch (e) {
      // Postgres unreachable for a moment (the lookup's cache entry expired), or too many look-ups of keys not known
      // as endpoints waiting (not logged: anyone can send those): nothing was stored, retrying is safe.
      if (!(e instanceof LaneFullError)) this.logger.warn(`endpoint lookup failed: ${(e as Error).message}`);
      return reply.status(503).header('retry-after', '1').send({ error: 'the endpoint cannot be looked up right now: retry later', code: 'unavailable', details: { retry_after_seconds: 1 } });
    }
    if (!target || !target.active) return reply.status(404).send({ error: `no active HTTP ${target?.kind ?? 'source'} at endpoint ${clipped(endpointKey)}`, code: 'not_found' });
    // A body in another transfer coding than chunked (`gzip, chunked`) comes as sent, undecoded: refused, not stored.
    assertChunkedOnly(req.headers['transfer-encoding']);
    const request: IngressRequest = { method: req.method, url: req.url, headers: req.headers, query: req.query as Record<string, unknown>, ip: req.ip, body: Buffer.isBuffer(req.body) ? decodeHttpBody(req.body, req.headers['content-type']) : '' };
    if (!target.customResponse) return this.send(reply, await this.answerPlain(target, endpointKey, request));
    const refusal = this.refusal(target, endpointKey, request);
    if (refusal) return this.send(reply, refusal);
    const msg = this.invocationOf(target, endpointKey, request);
    msg.replyTo = this.nats.names.httpResponseFor(this.replicaToken, msg.invocationId);
    // On the shared origin (not `<key>.<ENDPOINT_DOMAIN>`), the component's cookies are kept under its own path, whatever
    // path the request was routed by (before 2026-12-01, `/%65/<key>` kept the component's own `Path=/`). The host is the
    // one the browser connected to: `X-Forwarded-Host` counts only from a TRUST_PROXY proxy, as a page's script may send
    // it with a request to the shared origin (it routes the request, but cannot unscope the cookies).
    const hostHeaders = this.fromProxy(req.socket.remoteAddress) ? req.headers : { host: req.headers.host };
    const cookiePath = endpointKeyOfHost(this.config.endpointDomain, hostHeaders) === endpointKey ? undefined : `/e/${endpointKey}`;
    return this.roundTrip(target, msg, reply, cookiePath);
  }

  /** A request to an endpoint without a custom response, from its rate and backlog checks to its answer once stored. */
  answerPlain(target: EndpointTarget, endpointKey: string, request: IngressRequest): Promise<IngressAnswer> {
    // Promises rather than async functions: on this path each one costs (the api runs with async hooks on).
    try {
      const refusal = this.refusal(target, endpointKey, request);
      if (refusal) return Promise.resolve(refusal);
      return this.store(target, this.invocationOf(target, endpointKey, request)).then(
        () => STORED,
        (e: Error) => this.errorAnswer(e),
      );
    } catch (e) {
      return Promise.resolve(this.errorAnswer(e as Error));
    }
  }

  /** Why a request to `target` is refused before it is stored (its rate, the backlog, a body nested too deeply), if it is. */
  private refusal(target: EndpointTarget, endpointKey: string, request: IngressRequest): IngressAnswer | undefined {
    const retryAfter = this.limiter.take(endpointKey);
    if (retryAfter > 0) {
      return {
        status: 429,
        headers: { 'retry-after': String(retryAfter) },
        body: { error: `too many requests to this endpoint: at most ${this.config.httpRatePerSec} per second on average`, code: 'rate_limited', details: { retry_after_seconds: retryAfter } },
      };
    }
    const full = this.backlog.check(target);
    if (full) {
      const { error, details } = describeRefusal(full);
      return { status: 429, headers: { 'retry-after': String(full.retryAfterSeconds) }, body: { error, code: 'backlog_full', details } };
    }
    if (isJsonContentType(String(request.headers['content-type'] ?? '')) && jsonTextProblem(request.body, HTTP_BODY_MAX_JSON_DEPTH) === 'depth') {
      return { status: 400, body: { error: `the request body is JSON nested deeper than ${HTTP_BODY_MAX_JSON_DEPTH} levels`, code: 'invalid_request', details: { max_depth: HTTP_BODY_MAX_JSON_DEPTH } } };
    }
    return undefined;
  }

  /** The invocation a request becomes (counted as accepted). */
  private invocationOf(target: EndpointTarget, endpointKey: string, request: IngressRequest): InvocationMessage {
    this.backlog.accepted();
    return { invocationId: newId('invocation'), sourceId: target.sourceId, kind: 'http', event: this.eventOf(request, endpointKey), createdAtMs: Date.now() };
  }

  /** The answer to a request that failed while it was being stored (or to any error of the ingress's own route). */
  errorAnswer(err: Error & { statusCode?: number; code?: string }): IngressAnswer {
    // The rules every request meets first (registerRequestHygiene: a Host header…), in their own words.
    if (err instanceof ApiError) return { status: err.status, headers: err.headers, body: { error: err.message, code: err.code, ...(err.details ? { details: err.details } : {}) } };
    if (err.statusCode === 413) {
      const { bytes, limitBytes } = err as { bytes?: number; limitBytes?: number };
      return { status: 413, body: { error: err.message, code: 'payload_too_large', ...(limitBytes !== undefined ? { details: { bytes, limit_bytes: limitBytes } } : {}) } };
    }
    if (err.statusCode === 503) {
      const invocationId = (err as { invocationId?: string }).invocationId;
      return { status: 503, headers: { 'retry-after': '1' }, body: { error: err.message, code: 'unavailable', details: { invocation_id: invocationId, retry_after_seconds: 1 } } };
    }
    const dependency = dependencyError(err);
    if (dependency) {
      this.logger.warn(`ingress answered ${dependency.status}: ${describeCause(err)}`);
      return { status: dependency.status, headers: dependency.headers, body: { error: dependency.message, code: dependency.code, details: dependency.details } };
    }
    this.logger.error(`ingress failed: ${err.message}`);
    const clientError = !!err.statusCode && err.statusCode >= 400 && err.statusCode < 500;
    return { status: clientError ? err.statusCode! : 500, body: clientError ? { error: err.message, code: 'invalid_request' } : { error: 'internal error', code: 'internal' } };
  }

  private send(reply: FastifyReply, answer: IngressAnswer): FastifyReply {
    return reply.status(answer.status).headers(answer.headers ?? {}).send(answer.body);
  }

  /**
   * Registers the waiter before the invocation is stored (the replica's reply
   * subscription is already open), then waits for `respond()`.
   */
  private async roundTrip(target: EndpointTarget, msg: InvocationMessage, reply: FastifyReply, cookiePath: string | undefined): Promise<unknown> {
    const timeoutMs = this.config.httpResponseTimeoutMs;
    this.listen();
    let timer: NodeJS.Timeout | undefined;
    const answer = new Promise<HttpResponseMessage | Unrelayable | null | 'deleted'>((resolve) => {
      this.waiting.set(msg.invocationId, { sourceId: target.sourceId, resolve });
      timer = setTimeout(() => resolve(null), timeoutMs);
    });
    try {
      await this.store(target, msg);
      const res = await answer;
      if (res === 'deleted') {
        return reply.status(404).send({ error: `the ${target.kind} was deleted before it called respond()`, code: 'not_found', details: { invocation_id: msg.invocationId } });
      }
      if (!res) {
        return reply.status(504).send({ error: `the ${target.kind} did not call respond() within ${timeoutMs} ms`, code: 'gateway_timeout', details: { invocation_id: msg.invocationId } });
      }
      if ('unrelayable' in res) {
        return reply.status(502).send({ error: `the ${target.kind} answered with a response that cannot be relayed: ${res.unrelayable}`, code: 'source_error', details: { invocation_id: msg.invocationId } });
      }
      return this.relay(res, reply, cookiePath, target.kind);
    } finally {
      if (timer) clearTimeout(timer);
      this.waiting.delete(msg.invocationId);
    }
  }

  /** One subscription per api replica for every custom response (no per-request subscribe/unsubscribe), opened on first use. */
  private listen(): void {
    if (this.replies && !this.replies.isClosed()) return;
    this.replies = this.nats.nc.subscribe(this.nats.names.httpResponsesOf(this.replicaToken), {
      callback: (err, m) => {
        if (err) return;
        const invocationId = m.subject.slice(m.subject.lastIndexOf('.') + 1);
        const resolve = this.waiting.get(invocationId)?.resolve;
        if (!resolve) return;
        try {
          resolve(relayable(decodeJson<unknown>(m.data)));
        } catch {
          resolve({ unrelayable: 'it is not JSON' });
        }
      },
    });
  }

  private relay(res: HttpResponseMessage, reply: FastifyReply, cookiePath: string | undefined, kind: EndpointTarget['kind']): FastifyReply {
    if (res.status < 200 && res.status >= 100) {
      // HTTP cannot end an exchange with an informational status: the client would wait forever.
      return reply.status(502).send({ error: `the ${kind} responded with status ${res.status}: an informational (1xx) status cannot be the final response`, code: 'bad_gateway' });
    }
    reply.status(res.status >= 200 && res.status <= 599 ? res.status : 502);
    relaysComponentAnswer(reply);
    for (const [k, v] of Object.entries(res.headers ?? {})) {
      const name = k.toLowerCase();
      // The server computes the framing headers.
      if (FRAMING_HEADERS.has(name) || ORIGIN_WIDE.has(name)) continue;
      reply.header(k, name === 'set-cookie' ? scopeSetCookies(v, cookiePath) : v);
    }
    // The component's own policy, if any, still applies: a browser enforces every policy listed.
    const own = reply.getHeader('content-security-policy');
    reply.header('content-security-policy', own === undefined ? ENDPOINT_SANDBOX_CSP : `${[own].flat().join(', ')}, ${ENDPOINT_SANDBOX_CSP}`);
    const contentType = reply.getHeader('content-type') as string | string[] | undefined;
    keepsContentType(reply, contentType);
    if (res.body === undefined) return reply.send();
    // Bytes, so Fastify leaves the component's Content-Type as written (a text body got `; charset=utf-8` added to a
    // JSON type); without one, a text body is text/plain in UTF-8 and bytes are application/octet-stream.
    if (contentType === undefined) reply.header('content-type', res.bodyEncoding === 'base64' ? 'application/octet-stream' : 'text/plain; charset=utf-8');
    return reply.send(Buffer.from(res.body, res.bodyEncoding === 'base64' ? 'base64' : 'utf8'));
  }

  /** Stores the invocation; throws (before anything is sent) or rejects as `errorAnswer` reads it. */
  private store(target: EndpointTarget, msg: InvocationMessage): Promise<void> {
    let data = encodeJson(msg);
    // A body near the size limit, stored both raw (JSON-escaped) and parsed, can pass NATS's payload limit: store it once, packed.
    const maxPayload = this.nats.maxPayload;
    if (data.length > maxPayload - 8192 && msg.kind === 'http') data = encodeJson({ ...msg, event: packHttpEvent(msg.event as HttpEvent) });
    if (data.length > maxPayload) {
      // HTTP_MAX_BODY_BYTES set above what one NATS message carries: a clear 413, not a 500 from the broker.
      throw Object.assign(new Error(`request too large to store: ${data.length} bytes as an invocation, the NATS server's max_payload is ${maxPayload} bytes`), { statusCode: 413, bytes: data.length, limitBytes: maxPayload });
    }
    const subject = this.nats.names.invocation(target.partition, target.sourceId);
    const stored = (): Promise<void> =>
      this.batches.store(subject, msg, data).catch((e: Error) => {
        // NATS unreachable or electing a leader: the request may or may not be stored (an acknowledgement can be lost).
        throw Object.assign(new Error(`the request could not be confirmed as stored (${e.message}): retry later; it may have been stored, so a retry can make a second event`), { statusCode: 503, invocationId: msg.invocationId });
      });
    if (this.nats.connectedNow) return stored();
    // NATS down and not back within a moment: refused before anything is sent, so a retry cannot make a second event.
    return this.nats.waitConnected().then((up) => {
      if (!up) throw new ServiceUnavailableError('the request was not stored: the service cannot reach NATS right now; retry later', 1);
      return stored();
    });
  }

  private eventOf(request: IngressRequest, endpointKey: string): HttpEvent {
    const { url, headers } = request;
    const qIndex = url.indexOf('?');
    const pathname = qIndex >= 0 ? url.slice(0, qIndex) : url;
    const prefix = `/e/${endpointKey}`;
    const rest = pathname.startsWith(prefix) ? pathname.slice(prefix.length) : pathname;
    const raw = request.body;
    return {
      method: request.method,
      path: rest || '/',
      query: { ...request.query },
      headers: { ...headers },
      bodyRaw: raw,
      body: parseHttpBody(String(headers['content-type'] ?? ''), raw),
      url: `${endpointUrlOf(this.config, endpointKey)}${rest}${qIndex >= 0 ? url.slice(qIndex) : ''}`,
      client_ip: request.ip,
    };
  }
}

/** The Content-Type of each request to `/e/…` as sent, while Fastify reads its body as bytes (onModuleInit). */
const sentContentTypes = new WeakMap<IncomingMessage, string>();

/** An answer from the runner the api will not write, and why. */
interface Unrelayable {
  unrelayable: string;
}

/**
 * The runner's answer checked again where it is written: the runner and the sandbox check it (checkedResponse), but an
 * answer that reaches the api unchecked (a compromised runner, a bug on the message path) must not make it write a head
 * a client cannot read (20,000 headers, one of 900 KB), throw while writing (a header name with a space: a 500), or
 * read `null` as no answer yet (a 504 later). What respond() allows, and no more, is relayed.
 */
export function relayable(message: unknown): HttpResponseMessage | Unrelayable {
  const checked = checkedResponse(message);
  if (checked) return checked;
  const headers = (message as { headers?: unknown } | null)?.headers;
  const headersProblem = typeof headers === 'object' && headers !== null && !Array.isArray(headers) ? responseHeadersProblem(headers as Record<string, string | string[]>) : undefined;
  return {
    unrelayable:
      headersProblem ??
      'it is not a respond() answer (a status from 100 to 599, header names and text values as HTTP allows them, a text body in utf8 or base64)',
  };
}

/** A request to `/e/…` as the ingress reads it, whichever way it came in (Fastify's route or the fast path). */
export interface IngressRequest {
  method: string;
  /** The URL as routed (after an `<endpoint_key>.<ENDPOINT_DOMAIN>` host was rewritten to `/e/<endpoint_key>…`). */
  url: string;
  headers: IncomingHttpHeaders;
  query: Record<string, unknown>;
  /** The client's address: the connection's, or the one a proxy TRUST_PROXY names forwarded in `X-Forwarded-For`. */
  ip: string;
  /** The body as text: decoded in the charset its Content-Type declares, else as UTF-8 ('' when the request had none). */
  body: string;
}

/** An answer of the ingress: a JSON body with its status and extra headers. */
export interface IngressAnswer {
  status: number;
  headers?: Record<string, string>;
  body: object;
}

/** What a stored request is answered. */
const STORED: IngressAnswer = { status: 200, body: { success: true } };
