import { encodeJson } from './messages';
import { ApiError } from './errors';
import { charsetsOf, decodeHttpBody, HttpEvent, jsonTextProblem, packHttpEvent, parseHttpBody, unpackHttpEvent } from './http-event';

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

describe('request bodies in the charset their Content-Type declares', () => {
  const refusal = (contentType: string): unknown => {
    try {
      decodeHttpBody(Buffer.from('x'), contentType);
    } catch (e) {
      return { status: (e as ApiError).status, code: (e as ApiError).code, details: (e as ApiError).details };
    }
    return undefined;
  };

  it('reads charset parameters: any case, quoted or not, not inside another quoted value', () => {
    expect(charsetsOf('text/plain')).toEqual([]);
    expect(charsetsOf('text/plain; CHARSET="UTF-16LE"; format=flowed')).toEqual(['utf-16le']);
    expect(charsetsOf('text/plain;x="a; charset=koi8-r";charset=latin1')).toEqual(['latin1']);
    expect(charsetsOf('charset=latin1')).toEqual([]);
  });

  it('decodes windows-1252 by its table (every iso-8859-1 label is windows-1252), other charsets by TextDecoder', () => {
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const text = decodeHttpBody(all, 'text/plain; charset=iso-8859-1');
    expect(text).toHaveLength(256);
    expect([text[0x41], text[0x80], text[0x81], text[0x92], text[0x9f], text[0xe9], text[0xff]]).toEqual(['A', '€', '\u0081', '’', 'Ÿ', 'é', 'ÿ']);
    expect(decodeHttpBody(all, 'text/plain; charset=windows-1252')).toBe(text);
    expect(decodeHttpBody(Buffer.from('é☃', 'utf16le'), 'text/plain; charset=utf-16')).toBe('é☃');
    expect(decodeHttpBody(Buffer.from([0xa1]), 'text/plain; charset=iso-8859-2')).toBe('Ą');
    // UTF-8, declared or not, is read as before: a BOM kept, bytes that do not decode U+FFFD.
    expect(decodeHttpBody(Buffer.from([0xef, 0xbb, 0xbf, 0x61, 0xff]), 'text/plain; charset=UTF-8')).toBe('\ufeffa\ufffd');
    expect(decodeHttpBody(Buffer.from([0xef, 0xbb, 0xbf, 0x61, 0xff]), undefined)).toBe('\ufeffa\ufffd');
  });

  it('answers 415 for a charset TextDecoder does not know, and for two different ones', () => {
    for (const charset of ['klingon', 'binary', 'x-user-defined', 'iso-2022-kr', '']) {
      expect(refusal(`text/plain; charset=${charset}`)).toEqual({ status: 415, code: 'unsupported_media_type', details: { header: 'content-type', charset } });
    }
    expect(refusal('text/plain; charset=latin1; charset=utf-8')).toEqual({ status: 415, code: 'unsupported_media_type', details: { header: 'content-type', charsets: ['latin1', 'utf-8'] } });
    expect(refusal('text/plain; charset=latin1; charset=LATIN1')).toBeUndefined();
    expect(refusal(`text/plain; charset=${'x'.repeat(5000)}`)).toMatchObject({ details: { charset: `${'x'.repeat(100)}…` } });
  });

  it("parses a form's escapes as bytes of its charset, and a stored event's form whose charset is unknown as UTF-8", () => {
    expect(parseHttpBody('application/x-www-form-urlencoded; charset=windows-1252', 'a=caf%E9+%80&b=%zz&b=%&%E9=x&c')).toEqual({ a: 'café €', b: ['%zz', '%'], 'é': 'x', c: '' });
    expect(parseHttpBody('application/x-www-form-urlencoded; charset=utf-16le', 'a=%E9%00%03%26')).toEqual({ a: 'é☃' });
    expect(parseHttpBody('application/x-www-form-urlencoded; charset=klingon', 'a=%C3%A9')).toEqual({ a: 'é' });
    expect(parseHttpBody('application/x-www-form-urlencoded; charset=utf-8', 'a=%C3%A9&__proto__=1')).toEqual(Object.fromEntries([['a', 'é'], ['__proto__', '1']]));
  });
});
