import type { FastifyInstance, FastifyReply } from 'fastify';
import { API_ANSWER_HEADERS } from '@app/contracts';

/**
 * Headers of an SSE stream, written on the raw response (the hijacked reply skips `onSend`): the same
 * `no-store` and `nosniff` as every other answer of the API (streams carry events), plus `no-transform`
 * and `x-accel-buffering: no` so that proxies neither compress nor buffer the stream.
 */
export const SSE_RESPONSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store, no-transform',
  'x-content-type-options': 'nosniff',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;

/** Answers a component gave with `$.respond()` (HttpIngress.relay): sent as it wrote them. */
const componentAnswers = new WeakSet<FastifyReply>();
/** The Content-Type each of them gave: Fastify replaces one it cannot parse (`foo`, a list) with its default. */
const ownContentTypes = new WeakMap<FastifyReply, string | string[]>();

/** Marks `reply` as a component's own answer, which gets none of the API answer headers. */
export function relaysComponentAnswer(reply: FastifyReply): void {
  componentAnswers.add(reply);
}

/** The Content-Type a component's answer is sent with, whatever Fastify makes of it. */
export function keepsContentType(reply: FastifyReply, contentType: string | string[] | undefined): void {
  if (contentType !== undefined) ownContentTypes.set(reply, contentType);
}

/**
 * Answers of the API carry account data (keys from the admin routes, events, secrets' names):
 * no browser, proxy or CDN may keep them, and a browser must not guess their type. At the public HTTP
 * interface of sources and workflows (`/e/…`) an answer a component gave with `$.respond()` is relayed with the
 * headers it chose, and the dashboard's files set their own caching (apps/api/src/web/web-ui.ts), which is kept. These headers go on
 * every other answer: the platform's own at `/e/…` too (`{ success: true }`, 404, 413, 429, 503, 504…), and those
 * written below Fastify's hooks (a request Node could not parse, CONNECT, the router's own errors: raw-json-answers.ts).
 * The headers themselves are API_ANSWER_HEADERS (libs/contracts): the runner's own answers to a waiting request (the
 * component ended without `respond()`, its answer too large for NATS) carry them too.
 */
export function registerResponseHeaders(fastify: FastifyInstance): void {
  fastify.addHook('onSend', async (req, reply, payload) => {
    // The dashboard's files set their own caching and keep it (only missing headers are added); its errors and
    // redirects get these too (before 2026-12-01 its 404s and a URL refused there, `/ui/%00`, went without nosniff).
    if (componentAnswers.has(reply)) {
      const own = ownContentTypes.get(reply);
      if (own !== undefined) reply.header('content-type', own);
      return payload;
    }
    for (const [name, value] of Object.entries(API_ANSWER_HEADERS)) if (reply.getHeader(name) === undefined) reply.header(name, value);
    return payload;
  });
}
