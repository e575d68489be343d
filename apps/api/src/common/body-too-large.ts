import { HttpException } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** Most bytes of a refused body read (and dropped) so that its sender gets the 413 (see `keepConnectionToDrain`). */
export const DRAIN_MAX_BYTES = 64 * 1024 * 1024;

/** Fastify's refusal of a body over its limit, as it is or as Nest passes it on. */
export function isBodyTooLarge(err: unknown): boolean {
  return (err as { code?: string } | undefined)?.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || (err instanceof HttpException && err.getStatus() === 413);
}

/** The `413`'s details: the limit, and the body's size when its Content-Length declared it (a chunked one's is unknown). */
export function tooLargeDetails(req: FastifyRequest | undefined, limitBytes: number): { bytes?: number; limit_bytes: number } {
  const declared = Number(req?.headers['content-length']);
  return Number.isSafeInteger(declared) && declared > limitBytes ? { bytes: declared, limit_bytes: limitBytes } : { limit_bytes: limitBytes };
}

/**
 * A body whose declared length is over the limit is refused before any of it is read, and Fastify then closes the
 * connection: a client still sending the body met a closed socket (EPIPE) instead of reading the 413 — undici's
 * fetch always, for a body of a few MiB. Up to DRAIN_MAX_BYTES the connection stays open instead: Node reads and
 * drops the rest of the body once the answer is sent (within HTTP_REQUEST_TIMEOUT_MS), then serves the next request.
 * A larger declared body, or one sent in chunks (its reading stopped midway), still closes the connection.
 */
export function keepConnectionToDrain(err: unknown, req: FastifyRequest | undefined, reply: FastifyReply): void {
  if (!isBodyTooLarge(err) || !req || reply.getHeader('connection') !== 'close') return;
  const declared = Number(req.headers['content-length']);
  if (!Number.isSafeInteger(declared) || declared > DRAIN_MAX_BYTES || req.raw.readableDidRead) return;
  reply.removeHeader('connection');
}
