import { sendProblem } from './workflow-sends';

const settings = { smtpUrl: 'smtp://127.0.0.1:2525', s3Endpoint: 'http://127.0.0.1:9000' };
const s3 = (payload: unknown) => sendProblem({ kind: 's3', payload } as Parameters<typeof sendProblem>[0], settings);
const sse = (payload: unknown) => sendProblem({ kind: 'sse', payload } as Parameters<typeof sendProblem>[0], settings);
const emit = (payload: unknown) => sendProblem({ kind: 'emit', payload } as Parameters<typeof sendProblem>[0], settings);

describe('$.send checks made when a step calls them', () => {
  it('refuses a $.send.http header the request could not carry: a name that is not a token, a value with CR, LF or NUL, or not text', () => {
    const http = (headers: unknown) => sendProblem({ kind: 'http', payload: { url: 'https://example.com/x', headers } } as never, {});
    expect(http({ 'x-ok': 'v', 'content-type': 'application/json', n: 5 })).toBeUndefined();
    expect(http({ 'bad header': 'x' })).toBe('$.send.http(): header name "bad header" is not an HTTP token');
    for (const value of ['a\r\nset-cookie: x', 'a\nb', 'a\u0000b', { a: 1 }, null]) expect(http({ 'x-v': value })).toBe('$.send.http(): header x-v must be a string without CR, LF or NUL');
  });

  it('refuses the $.send.http headers that frame the request or manage its connection (other accounts share it)', () => {
    const http = (headers: unknown) => sendProblem({ kind: 'http', payload: { url: 'https://example.com/x', headers } } as never, {});
    for (const name of ['Content-Length', 'transfer-encoding', 'Connection', 'keep-alive', 'Proxy-Connection', 'upgrade', 'TE', 'trailer', 'Expect']) {
      expect(http({ [name]: '1' })).toBe(`$.send.http(): header ${name} is the platform's to set (it frames the request or manages its connection)`);
    }
    expect(http({ host: 'example.org', 'content-type': 'text/plain', 'x-te': '1' })).toBeUndefined();
  });

  it("refuses the $.send.http headers a proxy writes about the client (the api may trust the platform's machines)", () => {
    const http = (headers: unknown) => sendProblem({ kind: 'http', payload: { url: 'https://example.com/x', headers } } as never, {});
    for (const name of ['X-Forwarded-For', 'x-forwarded-host', 'X-Forwarded-Proto', 'Forwarded']) {
      expect(http({ [name]: '1.2.3.4' })).toBe(`$.send.http(): header ${name} is a proxy's to set (it says who the client is; the platform's requests are not a proxy's)`);
    }
    expect(http({ 'x-forwarded-by-note': '1', 'x-real-ip-note': '1' })).toBeUndefined();
  });

  it('keeps $.send.s3 inside the bucket it names', () => {
    expect(s3({ bucket: 'my-bucket', prefix: 'orders/', payload: {} })).toBeUndefined();
    for (const prefix of ['../other-bucket/', 'a/../../other-bucket/', '/other-bucket/', './x/', 'a/./b']) expect(s3({ bucket: 'my-bucket', prefix, payload: {} })).toMatch(/prefix must not/);
    expect(s3({ bucket: 'Bad_Bucket', payload: {} })).toMatch(/valid bucket name/);
  });

  it('refuses a $.send.sse channel that could break the stream into forged fields', () => {
    expect(sse({ channel: 'orders', payload: 1 })).toBeUndefined();
    for (const channel of ['a\ndata: forged', 'a\r\nid: 1', '', 'x'.repeat(65)]) expect(sse({ channel, payload: 1 })).toMatch(/channel of letters/);
  });

  it('refuses a $.send.emit channel the platform reserves or could not index', () => {
    for (const payload of [{ raw_event: 1 }, { raw_event: 1, name: 'orders' }, { raw_event: 1, name: 'c'.repeat(255) }, 'plain', { no_raw_event: true, name: '$errors' }]) expect(emit(payload)).toBeUndefined();
    expect(emit({ raw_event: 1, name: 'c'.repeat(256) })).toMatch(/^\$\.send\.emit\(\): name \(the channel\) must be at most 255 characters/);
    for (const name of ['$errors', '$logs', '$x']) expect(emit({ raw_event: 1, name })).toMatch(/must not start with \$/);
    expect(emit({ raw_event: 1, name: 7 })).toMatch(/must be a string/);
  });
});
