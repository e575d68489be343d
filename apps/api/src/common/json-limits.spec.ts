import { decodeCursor } from './pagination';
import { assertJsonTextLimits } from './json-limits';

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
