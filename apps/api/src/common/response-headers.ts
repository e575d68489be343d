import type { FastifyInstance } from 'fastify';
import { isWebUiRoute } from '../web/web-ui';

/**
 * Answers of the API carry account data (keys from the admin routes, events, secrets' names):
 * no browser, proxy or CDN may keep them, and a browser must not guess their type. The public HTTP
 * interface of sources and workflows (`/e/…`) answers what the component chose, and the
 * dashboard's files set their own caching (apps/api/src/web/web-ui.ts). These headers go on every other
 * answer, also those written below Fastify's hooks (a request Node could not parse, CONNECT, the router's own errors).
 */
export const API_ANSWER_HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' } as const;

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

export function registerResponseHeaders(fastify: FastifyInstance): void {
  fastify.addHook('onSend', async (req, reply, payload) => {
    const url = req.url;
    if (url.startsWith('/e/') || isWebUiRoute(url)) return payload;
    for (const [name, value] of Object.entries(API_ANSWER_HEADERS)) if (reply.getHeader(name) === undefined) reply.header(name, value);
    return payload;
  });
}
