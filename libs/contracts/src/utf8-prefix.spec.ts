import { utf8Prefix } from './utf8-prefix';

describe('utf8Prefix', () => {
  it('keeps text that fits, and cuts longer text at a byte count on a character boundary', () => {
    expect(utf8Prefix('abc', 10)).toBe('abc');
    expect(utf8Prefix('a'.repeat(20), 10)).toBe('a'.repeat(10));
    // "é" is 2 bytes: 5 fit in 10 bytes, not 10 of them.
    expect(utf8Prefix('é'.repeat(20), 10)).toBe('é'.repeat(5));
    expect(utf8Prefix('é'.repeat(20), 9)).toBe('é'.repeat(4));
    // An emoji (4 bytes, two UTF-16 units) is kept whole or not at all.
    expect(utf8Prefix('abc😀def', 5)).toBe('abc');
    expect(utf8Prefix('abc😀def', 7)).toBe('abc😀');
  });
});
