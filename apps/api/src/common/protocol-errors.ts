import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { API_ANSWER_HEADERS, BadRequestError, clipped } from '@app/contracts';
import { isWebUiRoute } from '../web/web-ui';
import { endWithJsonAnswer, rawJsonAnswer } from './raw-json-answers';

/**
 * Errors raised below Nest, by Node's HTTP parser and by Fastify's router, in the service's one
 * error shape `{ error, code, details? }` (they default to Fastify's `{ error, message, statusCode }`).
 */

/** Fastify `clientErrorHandler`: the request could not even be parsed (header overflow, bad request line, timeout). */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, code, message] =
    err.code === 'HPE_HEADER_OVERFLOW' && requestLineOverflowed(err)
      ? [414, 'URI Too Long', 'uri_too_long', 'the URL is longer than the server accepts (16 KiB with the headers)']
      : err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'header_too_large', 'the request line and headers are larger than the server accepts (16 KiB)']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'request_timeout', 'the request was not received in time']
        : [400, 'Bad Request', 'invalid_request', 'the request is not valid HTTP'];
  if (socket.writable) socket.write(rawJsonAnswer(status, reason, { error: message, code }));
  socket.destroy(err);
}

/** The overflow happened in the request line itself (a huge URL), not in the headers after it. */
function requestLineOverflowed(err: NodeJS.ErrnoException): boolean {
  const raw = (err as { rawPacket?: Buffer }).rawPacket;
  if (!raw || !/^[A-Z]+ \//.test(raw.subarray(0, 16).toString('latin1'))) return false;
  const end = raw.indexOf('\r\n');
  return end < 0 || end > 8192;
}

const BAD_URL_ENCODING = 'the URL is not valid (bad percent-encoding)';

/** Fastify `frameworkErrors`: a URL the router cannot read (bad percent-encoding, a path segment over maxParamLength). */
export function frameworkErrors(err: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  // The router answers these before any hook runs, so without the headers every other answer gets in onSend.
  void reply.headers(API_ANSWER_HEADERS);
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void reply.code(414).send({ error: 'a path segment of the URL is too long', code: 'uri_too_long' });
    return;
  }
  if (err.code === 'FST_ERR_BAD_URL') {
    void reply.code(400).send({ error: BAD_URL_ENCODING, code: 'invalid_request' });
    return;
  }
  const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400;
  void reply.code(status).send({ error: err.message, code: 'invalid_request' });
}

/**
 * Headers a request may give once only, by their names as written: Node keeps the first of several, where a proxy in
 * front may have read another (routed by another Host, checked another Authorization, parsed the body as another type).
 */
const SINGLE_HEADERS = new Map([
  ['host', 'Host'],
  ['authorization', 'Authorization'],
  ['content-type', 'Content-Type'],
]);

/** The first of Host, Authorization and Content-Type that a request gives more than once (its lower-case name), if any. */
export function repeatedHeader(raw: string[]): string | undefined {
  const seen: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (!SINGLE_HEADERS.has(name)) continue;
    if (seen.includes(name)) return name;
    seen.push(name);
  }
  return undefined;
}

/** Routes of the API proper (not the public HTTP interface of sources, which relays whatever it receives). */
function isApiUrl(url: string): boolean {
  return !url.startsWith('/e/');
}

/**
 * A query string with an escape that is not percent-encoded UTF-8 (`%zz`, `%2`, `%ff`, `%C3` alone). Fastify's
 * query parser keeps such a value as written (`a%zzb`), where the router refuses the same bytes in the path.
 * Its pieces are split at `&` and `=`, never inside an escape, so the whole is valid exactly when every piece is.
 */
export function hasBadQueryEncoding(url: string): boolean {
  const q = url.indexOf('?');
  if (q < 0 || url.indexOf('%', q) < 0) return false;
  try {
    decodeURIComponent(url.slice(q + 1));
    return false;
  } catch {
    return true;
  }
}

/**
 * Input rules no route may skip: a NUL character anywhere in the URL (`%00`) is refused before it can
 * reach Postgres, a query string with broken percent-encoding is refused as the router refuses such a path
 * (the dashboard's files read no query: the page reads its own), and two `Host`, `Authorization` or `Content-Type`
 * headers are refused rather than picking one, on every route.
 */
export function registerRequestHygiene(fastify: FastifyInstance): void {
  // CONNECT (a proxy tunnel) is no request to this service: without a listener Node drops the connection unanswered.
  fastify.server.on('connect', (_req: unknown, socket: Socket) => {
    socket.end(rawJsonAnswer(405, 'Method Not Allowed', { error: 'CONNECT is not supported: this is not a proxy', code: 'method_not_allowed' }));
  });
  // An Expect other than 100-continue: without a listener Node answers 417 with no body.
  fastify.server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const expect = clipped(String(req.headers.expect ?? ''));
    // The body the client holds back may still come: the connection is not read further.
    endWithJsonAnswer(res, 417, { error: `the Expect header asks for ${expect}: only 100-continue is supported`, code: 'expectation_failed', details: { header: 'expect' } });
  });
  fastify.addHook('onRequest', async (req, reply) => {
    // Node's parser takes an `HTTP/2.0` or `HTTP/0.9` request line as text (other versions it refuses): neither is
    // HTTP/1.x, whose rules (Host) this server applies, so it is refused rather than read as HTTP/1.1 without them.
    if (req.raw.httpVersionMajor !== 1) {
      throw new BadRequestError(`HTTP/${req.raw.httpVersion} is not supported: send HTTP/1.1 (or HTTP/1.0)`, { http_version: req.raw.httpVersion });
    }
    // HTTP/1.1 requires Host (RFC 9112 §3.2); Node's own check (disabled in bootstrap) would answer with no body.
    if (req.raw.httpVersion === '1.1' && req.headers.host === undefined) throw new BadRequestError('the Host header is required', { header: 'host' });
    // ...and exactly one (RFC 9112 §3.2: 400), as one Authorization and one Content-Type: on `/e/…` too, whose source
    // would have seen the first of them.
    const repeated = repeatedHeader(req.raw.rawHeaders);
    if (repeated) throw new BadRequestError(`send one ${SINGLE_HEADERS.get(repeated)} header, not several`, { header: repeated });
    // A client keeps a URL's fragment to itself (RFC 9110 §4.2.4): in a request target, the router read it as query
    // (on `/e/…` too, where the event's path and url kept it: `/x#a?b=1` became the query `{"a?b":"1"}`).
    if (req.url.includes('#')) throw new BadRequestError('the request target contains a fragment (#…), which is never sent to a server: leave it out', { reason: 'fragment' });
    // The asterisk form (RFC 9112 §3.2.4) asks about the server as a whole: a ping, answered (another method with it
    // has no route: asteriskFormMisused).
    if (req.raw.url === '*' && req.method === 'OPTIONS') return reply.code(204).send();
    if (!isApiUrl(req.url)) return;
    if (/%00/i.test(req.url)) throw new BadRequestError('the URL contains a NUL character (%00), which is not accepted', { reason: 'nul_character' });
    if (hasBadQueryEncoding(req.url) && !isWebUiRoute(req.url.slice(0, req.url.indexOf('?')))) throw new BadRequestError(BAD_URL_ENCODING);
  });
}

/** A method other than OPTIONS with the asterisk form (`GET * HTTP/1.1`), which RFC 9112 §3.2.4 keeps for OPTIONS: a 400 saying so. */
export function asteriskFormMisused(req: FastifyRequest | undefined): BadRequestError | undefined {
  if (req?.raw.url !== '*' || req.method === 'OPTIONS') return undefined;
  return new BadRequestError(`the request target * is for OPTIONS only: send ${clipped(req.method)} to a path`, { reason: 'asterisk_form' });
}
