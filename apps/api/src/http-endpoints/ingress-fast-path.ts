import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Logger } from '@nestjs/common';
import proxyAddr from '@fastify/proxy-addr';
import { parse as parseQuery } from 'fast-querystring';
import { trustProxyFunction, type TrustProxy } from '@app/config';
import { API_ANSWER_HEADERS, decodeHttpBody } from '@app/contracts';
import type { EndpointTarget } from './endpoint-lookup';
import { hostEndpointRewrite } from './endpoint-urls';
import { repeatedHeader } from '../common/protocol-errors';
import type { IngressAnswer, IngressRequest } from './http-ingress';

/** What the fast path asks of the ingress (HttpIngress). */
export interface FastIngress {
  plainTarget(endpointKey: string): EndpointTarget | undefined;
  answerPlain(target: EndpointTarget, endpointKey: string, request: IngressRequest): Promise<IngressAnswer>;
  /** Requests answered by each way in; the fast path counts its own. */
  readonly served: { fast: number };
  errorAnswer(err: Error): IngressAnswer;
}

export interface FastPathOptions {
  maxBodyBytes: number;
  endpointDomain: string;
  /** TRUST_PROXY, as Fastify's `trustProxy` reads it (bootstrap.ts): the client address is the one the route sees. */
  trustProxy: TrustProxy;
}

/** Methods whose body Fastify always reads (and the fast path then too). */
const METHODS = new Set(['POST', 'PUT', 'PATCH']);
const ENDPOINT_KEY = /^[a-z0-9]{1,64}$/;
const CONTENT_LENGTH = /^\d{1,10}$/;
/** A media type with optional parameters, as Fastify's content-type parser reads it without surprises. */
const PLAIN_CONTENT_TYPE = /^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(\s*;[ \w!#$%&'*+.^`|~=/"-]*)?$/;

/**
 * The HTTP interface's common case served without Fastify: a POST, PUT or PATCH with a `Content-Length` body
 * to `/e/<endpoint_key>[/…]` of a known active endpoint that answers `{ success: true }` once the request is stored
 * (no custom response). Fastify's routing, hooks, request and reply objects and body parser are a fifth to a quarter of
 * the api's CPU per such request (docs/benchmarks.md). Every other request — another method, a chunked or
 * oversized body, an endpoint not in the lookup's cache, a custom response, a URL with escapes, a host under
 * ENDPOINT_DOMAIN — goes to the Fastify route unchanged, and the answers here are the ones that route gives
 * (HttpIngress.answerPlain is shared; test/ingress-fast-path.e2e-spec.ts compares both ways request by request).
 */
export function installIngressFastPath(server: Server, ingress: FastIngress, opts: FastPathOptions): void {
  const logger = new Logger('IngressFastPath');
  const rewrite = opts.endpointDomain ? hostEndpointRewrite(opts.endpointDomain) : undefined;
  const trust = trustProxyFunction(opts.trustProxy);
  const routed = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  if (routed.length !== 1) {
    // Something else listens too (an embedding of the api): every request stays with the listeners as they are.
    logger.warn(`the api's HTTP server has ${routed.length} request listeners, not Fastify's alone: the ingress fast path is off`);
    return;
  }
  const [fastify] = routed;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const endpointKey = fastPathKey(req, opts.maxBodyBytes, rewrite);
    const target = endpointKey ? ingress.plainTarget(endpointKey) : undefined;
    if (!endpointKey || !target) return fastify.call(server, req, res);
    serve(req, res, ingress, target, endpointKey, trust, logger);
  });
}

/** The endpoint key of a request the fast path may serve, or undefined (Fastify serves it). */
export function fastPathKey(req: IncomingMessage, maxBodyBytes: number, rewrite?: (req: IncomingMessage) => string): string | undefined {
  const url = req.url;
  if (!url || !url.startsWith('/e/') || !METHODS.has(req.method ?? '')) return undefined;
  const headers = req.headers;
  // HTTP/1.x (the route's hook refuses another version), a Host header (HTTP/1.1 requires it: the Fastify route's hook
  // refuses a request without), no Host, Authorization or Content-Type given twice (the hook refuses those too), a body
  // of a length given up front and within the limit (Fastify answers the others: 413, chunked bodies).
  if (headers.host === undefined || req.httpVersionMajor !== 1 || headers['transfer-encoding'] !== undefined || repeatedHeader(req.rawHeaders)) return undefined;
  const length = headers['content-length'];
  if (length === undefined || !CONTENT_LENGTH.test(length) || Number(length) > maxBodyBytes) return undefined;
  const contentType = headers['content-type'];
  if (contentType !== undefined && !PLAIN_CONTENT_TYPE.test(contentType)) return undefined;
  if (rewrite && rewrite(req) !== url) return undefined;
  if (url.includes('#')) return undefined;
  const q = url.indexOf('?');
  const pathname = q >= 0 ? url.slice(0, q) : url;
  // Escapes and `;` are decoded or split by Fastify's router: its route reads those.
  if (pathname.includes('%') || pathname.includes(';')) return undefined;
  const end = pathname.indexOf('/', 3);
  const endpointKey = end >= 0 ? pathname.slice(3, end) : pathname.slice(3);
  return ENDPOINT_KEY.test(endpointKey) ? endpointKey : undefined;
}

function serve(req: IncomingMessage, res: ServerResponse, ingress: FastIngress, target: EndpointTarget, endpointKey: string, trust: (address: string, hop: number) => boolean, logger: Logger): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('error', () => undefined);
  req.on('end', () => {
    ingress.served.fast++;
    const url = req.url!;
    const q = url.indexOf('?');
    let answer: Promise<IngressAnswer>;
    try {
      const request: IngressRequest = {
        method: req.method!,
        url,
        headers: req.headers,
        query: q >= 0 && q < url.length - 1 ? parseQuery(url.slice(q + 1)) : {},
        ip: proxyAddr.all(req, trust).at(-1)!,
        body: decodeHttpBody(Buffer.concat(chunks), req.headers['content-type']),
      };
      answer = ingress.answerPlain(target, endpointKey, request);
    } catch (e) {
      answer = Promise.resolve(ingress.errorAnswer(e as Error));
    }
    answer.then(
      (a) => write(res, a),
      (e: Error) => {
        logger.error(`ingress fast path failed: ${e.message}`);
        write(res, ingress.errorAnswer(e));
      },
    );
  });
}

/**
 * Writes an answer as Fastify's `reply.send(object)` does: JSON, `application/json; charset=utf-8`, its length, and the
 * API answer headers its `onSend` hook adds (every answer here is the platform's own: registerResponseHeaders).
 */
function write(res: ServerResponse, answer: IngressAnswer): void {
  if (res.destroyed || res.headersSent) return;
  const body = JSON.stringify(answer.body);
  res.writeHead(answer.status, { ...answer.headers, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...API_ANSWER_HEADERS });
  res.end(body);
}
