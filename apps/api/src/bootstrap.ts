import 'reflect-metadata';
import { isUtf8 } from 'node:buffer';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyRequest } from 'fastify';
import { AppConfig, closeOnStopSignals, createLogger, PinoNestLogger, trustProxyFunction } from '@app/config';
import { ApiError, assertChunkedOnly, BadRequestError, clipped, mediaTypeOf, parseFormBody, textDecoderOf } from '@app/contracts';
import { AppModule } from './app.module';
import { requestUrlRewrite } from './http-endpoints/endpoint-urls';
import { assertFiniteNumbers, assertJsonTextLimits, assertNoNul, repeatedJsonKey } from './common/json-limits';
import { clientErrorHandler, frameworkErrors, registerRequestHygiene } from './common/protocol-errors';
import { requireDeclaredRoutes } from './contract/route-coverage';
import { givenMoreThanOnce, markFormBody } from './contract/contract-validator';
import { registerWebUi } from './web/web-ui';
import { registerResponseHeaders } from './common/response-headers';
import { registerShutdownAnswer, ShutdownState } from './common/shutdown-answer';
import { installLeanAsyncBind } from './common/lean-async-bind';
import { registerRequestContext } from './common/request-context';
import { registerClientGone } from './common/client-gone';
import { KeyConcurrency, registerKeyConcurrency } from './common/key-concurrency';
import { MikroORM } from '@mikro-orm/core';
import { boundConnections } from './common/connection-bounds';
import { ApiKeyGuard } from './auth/api-key.guard';
import { registerAuthBeforeBody } from './auth/auth-before-body';

/** Builds the api application (not yet listening); used by main.ts and the tests. */
export async function createApiApp(config: AppConfig): Promise<NestFastifyApplication> {
  const logger = createLogger('api', config.logLevel);
  installLeanAsyncBind();
  const adapter = new FastifyAdapter({
    bodyLimit: config.componentMaxBytes * 2 + 1024 * 1024,
    // req.ip (client_ip of HTTP source events) reads X-Forwarded-For only from the proxies TRUST_PROXY names: any client writes it.
    trustProxy: trustProxyFunction(config.trustProxy),
    // A request not received whole within this closes its connection (Node's requestTimeout; Fastify's default is none):
    // 21,000 connections that each sent a header and part of a body once held every file descriptor of the api.
    requestTimeout: config.httpRequestTimeoutMs,
    // The spec writes some paths with a trailing slash (`POST /sources/`, `GET /users/me/sources/`): both forms route.
    // (Not ignoreDuplicateSlashes: it also collapses `//` inside the query string, e.g. `?url=https://…`.)
    routerOptions: { maxParamLength: 500, ignoreTrailingSlash: true },
    // Errors of Node's HTTP parser and of the router, in the service's error shape.
    clientErrorHandler,
    frameworkErrors,
    // Node answers an HTTP/1.1 request without Host itself, with an empty body: registerRequestHygiene refuses it in the error shape.
    http: {
      requireHostHeader: false,
      // How often Node looks for requests past their timeout: within half of it, at most every 30 s (Node's default).
      connectionsCheckingInterval: config.httpRequestTimeoutMs ? Math.max(500, Math.min(30_000, Math.floor(config.httpRequestTimeoutMs / 2))) : 30_000,
    },
    // A target in absolute form is routed and read as its origin form; `<endpoint_key>.<ENDPOINT_DOMAIN>/<path>` is the
    // HTTP interface of that source, like `/e/<endpoint_key>/<path>`.
    rewriteUrl: requestUrlRewrite(config.endpointDomain),
    // registerShutdownAnswer answers requests while the api shuts down, in the service's error shape.
    return503OnClosing: false,
  });
  requireDeclaredRoutes(adapter.getInstance());
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), adapter, {
    logger: new PinoNestLogger(logger),
    bodyParser: false,
  });
  const fastify = app.getHttpAdapter().getInstance();
  const trusted = trustProxyFunction(config.trustProxy);
  boundConnections(fastify.server, { perAddress: config.httpMaxConnectionsPerAddress, total: config.httpMaxConnections, trusted: (address) => trusted(address, 0) });
  registerShutdownAnswer(fastify, app.get(ShutdownState));
  registerRequestHygiene(fastify);
  // Before anything that queries Postgres: one key's burst waits behind itself, not in the pool's queue.
  registerKeyConcurrency(fastify, new KeyConcurrency(config.apiMaxConcurrentPerKey, config.apiQueueWaitMs));
  registerRequestContext(fastify, app.get(MikroORM));
  // Component reads a request started are cancelled when its client goes away.
  registerClientGone(fastify);
  // After the key's lane: a body is read only for a known key.
  registerAuthBeforeBody(fastify, app.get(ApiKeyGuard));
  registerResponseHeaders(fastify);
  // The dashboard (apps/web): static files under /ui/, on the same origin as the API it calls.
  registerWebUi(fastify);
  // Lenient JSON: an empty body is no body (clients POST with parameters in the query).
  // Read as bytes: decoded as text by Fastify, a byte that is not UTF-8 became U+FFFD and the body's length a mismatch.
  // A type with the +json suffix (RFC 6839: application/merge-patch+json, application/vnd.api+json) is JSON, as the HTTP
  // endpoints of sources read it (isJsonContentType); Fastify matches the pattern against the lowercased media type.
  fastify.addContentTypeParser(['application/json', 'text/plain', 'application/x-www-form-urlencoded'], { parseAs: 'buffer' }, parseApiBody);
  fastify.addContentTypeParser(JSON_SUFFIX_TYPE, { parseAs: 'buffer' }, parseApiBody);
  // Errors raised by Fastify itself (body parsing, size) reach ErrorFilter through Nest's own
  // Fastify error handler, set at init: setting another one here would only be replaced (FSTWRN004).
  closeOnStopSignals(app);
  return app;
}

/** A /v1 request body (JSON, text holding JSON, or a form) read from its bytes; see createApiApp. */
function parseApiBody(req: FastifyRequest, bytes: string | Buffer, done: (err: Error | null, body?: unknown) => void): void {
  try {
    assertIdentityEncoding(req.headers['content-encoding']);
    assertChunkedOnly(req.headers['transfer-encoding']);
    // A body in another charset its Content-Type declares (`charset=iso-8859-1`, `utf-16le`) is read in it; an unknown one is a 415.
    const decoder = textDecoderOf(String(req.headers['content-type'] ?? ''));
    if (!decoder && !isUtf8(bytes as Buffer)) throw new BadRequestError('the request body is not valid UTF-8', { reason: 'invalid_utf8' });
    const decoded = decoder ? decoder.decode(bytes as Buffer) : bytes.toString('utf8');
    // A byte order mark before the text (RFC 8259 lets a reader ignore it) is not part of it.
    const text = decoded.charCodeAt(0) === 0xfeff ? decoded.slice(1) : decoded;
    if (text.trim() === '') return done(null, undefined);
    // Media types are case-insensitive (RFC 9110 §8.3.1), as Fastify matched this parser: `APPLICATION/X-WWW-FORM-URLENCODED` is a form.
    if (mediaTypeOf(req.headers['content-type']) === 'application/x-www-form-urlencoded') {
      // `curl -d '{...}'` without a Content-Type header sends JSON labelled as a form: read it as the JSON it is.
      const looksJson = /^\s*\{/.test(text);
      if (looksJson) assertJsonTextLimits(text);
      const json = looksJson ? tryJson(text) : undefined;
      if (json !== undefined) return done(null, withoutRepeatedKeys(json, text));
      assertFormEscapes(text, decoder === undefined);
      const form = parseFormBody(text, decoder);
      for (const [k, v] of Object.entries(form)) {
        assertNoNul(k + String(v), 'the request body');
        // A field given twice is refused as a repeated query parameter is, rather than one value being picked.
        if (Array.isArray(v)) throw givenMoreThanOnce(k, 'body');
      }
      // Its values are text: checked as a query string's are (`active=false`, `page=1`), not as JSON's types.
      return done(null, markFormBody(form));
    }
    assertJsonTextLimits(text);
    const json = tryJson(text);
    if (json === undefined) return done(Object.assign(new Error('the request body is not valid JSON'), { statusCode: 400 }), undefined);
    done(null, withoutRepeatedKeys(json, text));
  } catch (e) {
    done(e as Error, undefined);
  }
}

/**
 * A form's escapes are read as the query string's are: one that is not `%` and two hex digits (`%zz`, `%2`) is a 400,
 * as is, in a UTF-8 form, a run of escapes that is not UTF-8 (`%ff`, `%C3` alone), as a body of such bytes is. Parsed as
 * they were, `%zz` was kept as written and `%ff` stored as U+FFFD, not what was sent.
 */
function assertFormEscapes(text: string, utf8: boolean): void {
  if (text.indexOf('%') < 0) return;
  if (/%(?![0-9a-fA-F]{2})/.test(text)) throw new BadRequestError('the request body is not a valid form (bad percent-encoding)', { reason: 'bad_percent_encoding' });
  if (!utf8) return;
  for (const run of text.match(FORM_ESCAPE_RUNS) ?? []) {
    if (!isUtf8(Buffer.from(run.replace(/%/g, ''), 'hex'))) throw new BadRequestError('the request body is not valid UTF-8', { reason: 'invalid_utf8' });
  }
}

/** A run of percent escapes: the bytes of one piece of a form's text. */
const FORM_ESCAPE_RUNS = /(?:%[0-9a-fA-F]{2})+/g;

/** A media type whose subtype ends in `+json`, with or without parameters (the one isJsonContentType takes). */
const JSON_SUFFIX_TYPE = /^[^/;]+\/[^;]*\+json(?:;|$)/;

/**
 * A compressed body (`Content-Encoding: gzip`) is not decoded: read as JSON it was "not valid UTF-8", or, from a client
 * that labels a plain body so, accepted while saying otherwise. 415 names the header, as HTTP's semantics ask.
 */
function assertIdentityEncoding(header: string | undefined): void {
  const codings = (header ?? '').split(',').map((c) => c.trim().toLowerCase()).filter(Boolean);
  if (codings.every((c) => c === 'identity')) return;
  throw new ApiError(415, 'unsupported_media_type', `Content-Encoding ${clipped(codings.join(', '))} is not accepted: send the request body uncompressed`, { header: 'content-encoding' });
}

/** Parsed JSON whose text gives no key twice in one object (JSON.parse would keep the last value): at any depth, as a repeated form field. */
function withoutRepeatedKeys(json: unknown, text: string): unknown {
  const repeated = repeatedJsonKey(text);
  if (repeated !== undefined) throw givenMoreThanOnce(repeated, 'body');
  assertFiniteNumbers(json);
  return json;
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
