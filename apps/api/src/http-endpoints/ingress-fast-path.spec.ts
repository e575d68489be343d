import type { IncomingMessage } from 'node:http';
import { fastPathKey } from './ingress-fast-path';
import { hostEndpointRewrite } from './endpoint-urls';

const request = (over: { method?: string; url?: string; headers?: Record<string, string>; rawHeaders?: string[]; httpVersion?: string } = {}): IncomingMessage => {
  const headers: Record<string, string> = { host: 'localhost:3000', 'content-length': '17', 'content-type': 'application/json', ...over.headers };
  const httpVersion = over.httpVersion ?? '1.1';
  return {
    method: over.method ?? 'POST',
    httpVersion,
    httpVersionMajor: Number(httpVersion.split('.')[0]),
    url: over.url ?? '/e/enabc123/hooks?x=1',
    headers,
    // Read when the request is checked, as Node's are: the header lines as sent.
    get rawHeaders() {
      return over.rawHeaders ?? Object.entries(headers).flat();
    },
  } as unknown as IncomingMessage;
};

describe('fastPathKey: which requests the ingress serves without Fastify', () => {
  it('takes a POST, PUT or PATCH with a Content-Length body within the limit to /e/<key>[/…]', () => {
    expect(fastPathKey(request(), 2048)).toBe('enabc123');
    expect(fastPathKey(request({ method: 'PUT', url: '/e/enabc123' }), 2048)).toBe('enabc123');
    expect(fastPathKey(request({ method: 'PATCH', url: '/e/enabc123/?a=%20' }), 2048)).toBe('enabc123');
    expect(fastPathKey(request({ headers: { 'content-type': 'text/plain; charset="utf-8"' } }), 2048)).toBe('enabc123');
    const noType = request();
    delete noType.headers['content-type'];
    expect(fastPathKey(noType, 2048)).toBe('enabc123');
  });

  it('leaves everything else to the route', () => {
    for (const method of ['GET', 'HEAD', 'DELETE', 'OPTIONS']) expect(fastPathKey(request({ method }), 2048)).toBeUndefined();
    expect(fastPathKey(request({ headers: { 'content-length': '2049' } }), 2048)).toBeUndefined();
    expect(fastPathKey(request({ headers: { 'transfer-encoding': 'chunked' } }), 2048)).toBeUndefined();
    const chunked = request({ headers: { 'transfer-encoding': 'chunked' } });
    delete chunked.headers['content-length'];
    expect(fastPathKey(chunked, 2048)).toBeUndefined();
    const noHost = request();
    delete noHost.headers.host;
    expect(fastPathKey(noHost, 2048)).toBeUndefined();
    // A request line of another HTTP version that Node's parser takes (HTTP/2.0 as text): the route refuses it.
    expect(fastPathKey(request({ httpVersion: '2.0' }), 2048)).toBeUndefined();
    expect(fastPathKey(request({ httpVersion: '1.0' }), 2048)).toBe('enabc123');
    // Two Host lines (Node keeps the first): the route refuses them.
    expect(fastPathKey(request({ rawHeaders: ['Host', 'localhost:3000', 'host', 'other', 'Content-Length', '17'] }), 2048)).toBeUndefined();
    // Two Content-Type or Authorization lines, likewise.
    expect(fastPathKey(request({ rawHeaders: ['Host', 'localhost:3000', 'Content-Type', 'application/json', 'content-type', 'text/plain', 'Content-Length', '17'] }), 2048)).toBeUndefined();
    expect(fastPathKey(request({ rawHeaders: ['Host', 'localhost:3000', 'Authorization', 'Bearer a', 'AUTHORIZATION', 'Bearer b', 'Content-Length', '17'] }), 2048)).toBeUndefined();
    for (const url of ['/e/', '/e/ENABC', '/e/en%61bc/x', '/e/enabc/a%2Fb', '/e/enabc;x=1', '/e/enabc#frag', '/v1/sources', '/e/' + 'a'.repeat(65)]) {
      expect([url, fastPathKey(request({ url }), 2048)]).toEqual([url, undefined]);
    }
    expect(fastPathKey(request({ headers: { 'content-type': 'not a type' } }), 2048)).toBeUndefined();
    expect(fastPathKey(request({ headers: { 'content-type': 'application/json;;' } }), 2048)).toBeUndefined();
  });

  it('leaves a request to <key>.<ENDPOINT_DOMAIN> to the route, which rewrites it', () => {
    const rewrite = hostEndpointRewrite('events.example.com');
    expect(fastPathKey(request({ url: '/e/enabc123', headers: { host: 'enother9.events.example.com' } }), 2048, rewrite)).toBeUndefined();
    expect(fastPathKey(request({ url: '/e/enabc123', headers: { host: 'api.example.com' } }), 2048, rewrite)).toBe('enabc123');
  });
});
