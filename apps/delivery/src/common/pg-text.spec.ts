import { fromExactJson, pgJson, pgText } from './pg-text';

describe('text for Postgres', () => {
  it('replaces U+0000 in strings, JSON values and keys, and leaves an escaped backslash before "u0000" alone', () => {
    expect(pgText('a\u0000b')).toBe('a\ufffdb');
    expect(pgText(null)).toBeNull();
    expect(JSON.parse(pgJson({ 'k\u0000': 'x\u0000y', n: ['\u0000'] }))).toEqual({ 'k\ufffd': 'x\ufffdy', n: ['\ufffd'] });
    expect(JSON.parse(pgJson({ text: '\\u0000 is how JSON writes NUL' }))).toEqual({ text: '\\u0000 is how JSON writes NUL' });
    expect(JSON.parse(pgJson({ text: '\\\u0000' }))).toEqual({ text: '\\\ufffd' });
  });

  it('replaces a lone surrogate in JSON values and keys, and leaves pairs and an escaped backslash before "ud800" alone', () => {
    expect(JSON.parse(pgJson({ ['k\ud800']: '\udc00x\udbff', pair: '\ud83d\ude00' }))).toEqual({ 'k\ufffd': '\ufffdx\ufffd', pair: '\ud83d\ude00' });
    expect(JSON.parse(pgJson({ text: '\\ud800 is how JSON writes one' }))).toEqual({ text: '\\ud800 is how JSON writes one' });
  });

  it('reads a waiting retry written as base64 of its JSON (before the json column) and one written as itself', () => {
    const value = { event: { text: 'a\u0000b' }, n: 1 };
    expect(fromExactJson({ $json64: Buffer.from(JSON.stringify(value)).toString('base64') })).toEqual(value);
    expect(fromExactJson({ plain: true })).toEqual({ plain: true });
  });
});
