import { encodeJson } from './messages';
import { HttpEvent, jsonTextProblem, packHttpEvent, parseHttpBody, unpackHttpEvent } from './http-event';

const event = (bodyRaw: string, contentType = 'application/json'): HttpEvent => ({
  method: 'POST',
  path: '/',
  query: { a: '1' },
  headers: { 'content-type': contentType },
  bodyRaw,
  body: parseHttpBody(contentType, bodyRaw),
  url: 'http://x/e/k',
  client_ip: '127.0.0.1',
});

describe('HTTP events in invocation messages', () => {
  it('packs the body once as base64 and unpacks to the same event run receives', () => {
    const json = JSON.stringify({ items: Array.from({ length: 2000 }, (_, i) => ({ q: `"quoted" ${i}` })) });
    for (const e of [event(json), event('a=1&b=%C3%A9', 'application/x-www-form-urlencoded'), event('plain \u0001 text ✓', 'text/plain'), event('')]) {
      const packed = packHttpEvent(e);
      expect(packed).not.toHaveProperty('body');
      expect(unpackHttpEvent(JSON.parse(JSON.stringify(packed)))).toEqual(e);
    }
    // the packed form is bounded by 4/3 of the body; the plain one holds it twice, escaped
    const big = event(json);
    expect(encodeJson(packHttpEvent(big)).length).toBeLessThan(Buffer.byteLength(json) * 1.4 + 500);
    expect(encodeJson(big).length).toBeGreaterThan(Buffer.byteLength(json) * 2);
  });

  it('leaves other events alone', () => {
    const e = event('{"a":1}');
    expect(unpackHttpEvent(e)).toBe(e);
    expect(unpackHttpEvent({ timestamp: 1 })).toEqual({ timestamp: 1 });
    expect(unpackHttpEvent(undefined)).toBeUndefined();
  });
});

describe('jsonTextProblem', () => {
  it('finds nesting deeper than the bound, outside strings only', () => {
    expect(jsonTextProblem('[[[1]]]', 3)).toBeUndefined();
    expect(jsonTextProblem('[[[[1]]]]', 3)).toBe('depth');
    expect(jsonTextProblem('{"a":"[[[[[[\\"[[["}', 1)).toBeUndefined();
  });

  it('finds NUL characters, raw or escaped, only when asked (the HTTP interface passes them through)', () => {
    const escaped = '{"a":"x\\u0000"}';
    const raw = '{"a":"x\u0000"}';
    expect(jsonTextProblem(escaped, 10)).toBeUndefined();
    expect(jsonTextProblem(raw, 10)).toBeUndefined();
    expect(jsonTextProblem(escaped, 10, true)).toBe('nul');
    expect(jsonTextProblem(raw, 10, true)).toBe('nul');
    expect(jsonTextProblem('{"a":"x\\\\u0000"}', 10, true)).toBeUndefined();
  });

  it('finds lone UTF-16 surrogate escapes when asked, and passes whole pairs and escaped backslashes', () => {
    expect(jsonTextProblem('{"a":"\\ud800"}', 10, true)).toBe('surrogate');
    expect(jsonTextProblem('{"a":"\\udfff x"}', 10, true)).toBe('surrogate');
    expect(jsonTextProblem('{"a":"\\uD800\\u0041"}', 10, true)).toBe('surrogate');
    expect(jsonTextProblem('{"a":"\\ud83d\\ude00 \\u00e9 \\\\ud800"}', 10, true)).toBeUndefined();
    expect(jsonTextProblem('{"a":"\\ud800"}', 10)).toBeUndefined();
  });

  it('reads long strings as strings: what follows 1 MiB of code is found, brackets inside are not nesting', () => {
    const code = 'function f() { return [[["it\'s"]]]; }\n'.repeat(30_000);
    expect(jsonTextProblem(JSON.stringify({ component_code: code }), 2, true)).toBeUndefined();
    expect(jsonTextProblem(JSON.stringify({ component_code: code + '\u0000' }), 2, true)).toBe('nul');
    expect(jsonTextProblem(`{"c":"${'x'.repeat(1 << 20)}\\u0000"}`, 2, true)).toBe('nul');
    expect(jsonTextProblem(`{"c":"${'x'.repeat(1 << 20)}\u0000"}`, 2, true)).toBe('nul');
    expect(jsonTextProblem(`{"c":"${'x'.repeat(1 << 20)}\\ud800"}`, 2, true)).toBe('surrogate');
    expect(jsonTextProblem(JSON.stringify({ component_code: code, a: [[[1]]] }), 2, true)).toBe('depth');
    expect(jsonTextProblem(`{"c":"${'x'.repeat(1 << 20)}`, 2, true)).toBeUndefined();
  });
});
