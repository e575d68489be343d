import { METHODS } from 'node:http';
import type { FastifyInstance } from 'fastify';

/**
 * Every method Node's HTTP parser reads (PROPFIND, REPORT, MKCOL, LOCK…: `ANY /e/<endpoint_key>`), made known to
 * Fastify, which routes only GET, HEAD, TRACE, DELETE, OPTIONS, PATCH, PUT, POST and QUERY by default. An added
 * method's body is read like POST's when the request has one. CONNECT is left out: Node hands it to the server's
 * `connect` listener, never to the router (registerRequestHygiene answers it 405).
 */
export function endpointMethods(fastify: FastifyInstance): string[] {
  for (const method of METHODS) {
    if (method !== 'CONNECT' && !fastify.supportedMethods.includes(method)) fastify.addHttpMethod(method, { hasBody: true });
  }
  return fastify.supportedMethods;
}
