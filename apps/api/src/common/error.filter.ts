import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger, NotFoundException } from '@nestjs/common';
import { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, clipped, ServiceUnavailableError } from '@app/contracts';
import { allowedMethods } from '../contract/contract.interceptor';
import { dependencyError, describeCause } from './dependency-errors';
import { isBodyTooLarge, keepConnectionToDrain, tooLargeDetails } from './body-too-large';
import { asteriskFormMisused } from './protocol-errors';

interface ErrorBody {
  error: string;
  code: string;
  details?: Record<string, unknown>;
}

const CODES: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

/** Turns every error into `{ error, code, details? }` with its status; never a stack trace. */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('ErrorFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const dependency = dependencyError(exception);
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    const misused = exception instanceof NotFoundException ? asteriskFormMisused(request) : undefined;
    const [status, body, headers] = (misused && this.describe(misused)) ?? this.methodNotAllowed(exception, request) ?? this.unsupportedType(exception, request) ?? this.bodyTooLarge(exception, request) ?? this.describe(dependency ?? exception);
    // A dependency that is down fails many requests at once: one line each, without a stack; a bug gets its stack.
    // A 503 the api chose (shutting down, a lane full) is an answer, not a fault.
    if (dependency) this.logger.warn(`answered ${status} ${body.code}: ${describeCause(exception)}`);
    else if (status >= 500 && !(exception instanceof ServiceUnavailableError)) this.logger.error((exception as Error)?.stack ?? String(exception));
    if (reply.sent) return;
    keepConnectionToDrain(exception, request, reply);
    for (const [k, v] of Object.entries(headers ?? {})) reply.header(k, v);
    reply.status(status).send(body);
  }

  /** No route for this method, but the path has routes for others: 405 with `Allow`, not 404. */
  private methodNotAllowed(e: unknown, req: FastifyRequest | undefined): [number, ErrorBody, Record<string, string>] | undefined {
    if (!(e instanceof HttpException) || e.getStatus() !== 404 || !req || req.routeOptions?.url) return undefined;
    const allowed = allowedMethods(req.url);
    if (!allowed.length || allowed.includes(req.method)) return undefined;
    return [405, { error: `${req.method} is not allowed on ${clipped(req.url.split('?')[0])}; allowed: ${allowed.join(', ')}`, code: 'method_not_allowed' }, { allow: allowed.join(', ') }];
  }

  /** A body of a type no parser reads (Fastify's bare "Unsupported Media Type"): which type it has, which it may have. */
  private unsupportedType(e: unknown, req: FastifyRequest | undefined): [number, ErrorBody] | undefined {
    if (e instanceof ApiError || !req) return undefined;
    const status = e instanceof HttpException ? e.getStatus() : (e as { statusCode?: unknown } | undefined)?.statusCode;
    if (status !== 415) return undefined;
    const type = req.headers['content-type'];
    // An empty or blank header names no type: said as of a body without one (it read "Content-Type  is not accepted").
    const shown = type === undefined || type.trim() === '' ? undefined : clipped(type);
    const accepted = 'application/json (or a type ending in +json, text/plain, application/x-www-form-urlencoded)';
    const error = shown === undefined ? `the request body has no Content-Type: send it as ${accepted}` : `Content-Type ${shown} is not accepted: send the request body as ${accepted}`;
    return [415, { error, code: 'unsupported_media_type', details: { header: 'content-type' } }];
  }

  /** A body over the server's limit (Fastify's, as Nest passes it on: "Request body is too large"): how large one may be. */
  private bodyTooLarge(e: unknown, req: FastifyRequest | undefined): [number, ErrorBody] | undefined {
    if (e instanceof ApiError || !isBodyTooLarge(e)) return undefined;
    const limit = req?.routeOptions?.bodyLimit;
    if (limit === undefined) return [413, { error: 'the request body is too large', code: 'payload_too_large' }];
    return [413, { error: `the request body is larger than the ${limit} bytes the api accepts`, code: 'payload_too_large', details: tooLargeDetails(req, limit) }];
  }

  private describe(e: unknown): [number, ErrorBody, Record<string, string>?] {
    if (e instanceof ApiError) {
      const body: ErrorBody = { error: e.message, code: e.code };
      if (e.details) body.details = e.details;
      return [e.status, body, e.headers];
    }
    if (e instanceof HttpException) {
      const status = e.getStatus();
      const res = e.getResponse();
      let message = typeof res === 'string' ? res : ((res as { message?: unknown }).message ?? e.message);
      if (Array.isArray(message)) message = message.join('; ');
      // The router's "Cannot GET /path": the path is the client's, quoted cut as every value an error quotes.
      const missed = status === 404 ? /^Cannot (\S+) ([^]*)$/.exec(String(message)) : null;
      if (missed) message = `no such route: ${missed[1]} ${clipped(missed[2])}`;
      return [status, { error: String(message), code: CODES[status] ?? (status >= 500 ? 'internal' : 'error') }];
    }
    // Fastify's own errors (body parsing, bad content type) carry statusCode.
    const fe = e as { statusCode?: number; message?: string; code?: string };
    if (typeof fe?.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
      return [fe.statusCode, { error: fe.message ?? 'bad request', code: CODES[fe.statusCode] ?? 'invalid_request' }];
    }
    return [500, { error: 'internal error', code: 'internal' }];
  }
}
