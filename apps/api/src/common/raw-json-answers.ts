import type { ServerResponse } from 'node:http';
import { API_ANSWER_HEADERS } from '@app/contracts';

/**
 * JSON answers written below Fastify, where no `onSend` hook adds a header: a request Node could not parse, CONNECT,
 * an Expect the server does not meet, an endpoint body past HTTP_BODY_BYTES_IN_FLIGHT, a connection past
 * HTTP_MAX_CONNECTIONS_PER_ADDRESS. Each carries the API answer headers (no-store, nosniff) and closes its connection:
 * the rest of the request, if any, is not read.
 */
function headersOf(text: string, headers: Record<string, string>): Record<string, string | number> {
  return { 'content-length': Buffer.byteLength(text), 'content-type': 'application/json; charset=utf-8', ...API_ANSWER_HEADERS, ...headers, connection: 'close' };
}

/** The answer as the bytes to write on a socket that has no response object (the request was never parsed, CONNECT). */
export function rawJsonAnswer(status: number, reason: string, body: object, headers: Record<string, string> = {}): string {
  const text = JSON.stringify(body);
  const lines = Object.entries(headersOf(text, headers)).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${status} ${reason}\r\n${lines.join('')}\r\n${text}`;
}

/** The same answer written on a request's response object (the request was parsed, but Fastify never sees it). */
export function endWithJsonAnswer(res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, headersOf(text, headers));
  res.end(text);
}
