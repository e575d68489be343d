import { decodeCursor } from './pagination';
import { assertJsonTextLimits, repeatedJsonKey } from './json-limits';

describe('JSON text limits', () => {
  it('counts nesting outside strings only, without recursion', () => {
    expect(() => assertJsonTextLimits('['.repeat(100) + ']'.repeat(100))).not.toThrow();
    expect(() => assertJsonTextLimits('['.repeat(101) + ']'.repeat(101))).toThrow('the request body is nested deeper than 100 levels');
    expect(() => assertJsonTextLimits('{"a":"' + '['.repeat(5000) + '"}')).not.toThrow();
    expect(() => assertJsonTextLimits('['.repeat(1_000_000))).toThrow(/nested deeper/);
  });

  it('refuses the \\u0000 escape, not an escaped backslash before u0000', () => {
    expect(() => assertJsonTextLimits('{"a":"x\\u0000"}', 'name')).toThrow('name contains a NUL character');
    expect(() => assertJsonTextLimits('{"a":"x\\\\u0000"}')).not.toThrow();
    expect(() => assertJsonTextLimits('{"a\\u0000":1}')).toThrow(/NUL/);
  });
});

describe('cursors', () => {
  const enc = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
  it.each([[[1, 'x']], [[1.5, 'a']], [['1', 'a']], [[-1, 'a']], [[1e300, 'a']], [[1, 'a\u0000']], [{ k: 1 }], [[1, 'a', 2]]])('refuses %j for a numeric id', (value) => {
    expect(() => decodeCursor(enc(value), 'after', /^\d{1,9}$/)).toThrow('after is not a valid cursor');
  });
  it('accepts its own shape', () => {
    expect(decodeCursor(enc([1700000000000, '3']), 'after', /^\d{1,9}$/)).toEqual({ k: 1700000000000, id: '3' });
  });
});

describe('repeatedJsonKey', () => {
  it.each([
    ['{"name":"a","name":"b"}', 'name'],
    ['{ "url" : "ftp://y" ,\n "url": "http://x.com" }', 'url'],
    ['{"n\\u0061me":1,"name":2}', 'name'],
    ['{"configured_props":{"a":1,"b":{"c":1},"a":2}}', 'configured_props.a'],
    ['{"list":[{"b":1},{"b":1,"b":2}]}', 'list[1].b'],
    ['[[1,"x"],{"k":{"k":1},"k":2}]', '[1].k'],
    ['{"":1,"":2}', ''],
  ])('finds the key given twice in %s: %j', (text, path) => {
    JSON.parse(text);
    expect(repeatedJsonKey(text)).toBe(path);
  });

  it.each([
    '{"name":"a","names":"name"}',
    '{"a":{"b":1},"b":{"a":1}}',
    '{"a":[{"b":1},{"b":2}],"s":"\\"a\\":"}',
    '{"a":"x\\\\","b":["a","a"]}',
    '["a","a"]',
    '"a"',
    '{"k\\"":1,"k":2}',
  ])('finds none in %s', (text) => {
    JSON.parse(text);
    expect(repeatedJsonKey(text)).toBeUndefined();
  });
});
