import { escapeLiteral } from 'pg';
import { pgLiteral, PostgresPlatform } from './postgres-driver';

describe('string literals for Postgres', () => {
  it('writes a string literal exactly as node-postgres does', () => {
    const code = Array.from({ length: 20_000 }, (_, i) => `f${i}('it\\'s', "\\\\d", \`é\u{1F600}\`)\n`).join('');
    const samples = ['', 'plain', "it's", "''", '\\', 'a\\b', "a\\'b", JSON.stringify([['ev', '{"q":"x\\"y"}', "o'k"]]), '\u00e9\ud83d\ude00 \n\t', "E'x'", code];
    for (const s of samples) expect(pgLiteral(s)).toBe(escapeLiteral(s));
  });

  it('is what the ORM inlines strings with; other values as before', () => {
    const platform = new PostgresPlatform();
    expect(platform.escape("it's \\")).toBe(` E'it''s \\\\'`);
    expect(platform.escape(['a', "b'"])).toBe(`'a', 'b'''`);
    expect(platform.escape(42)).toBe('42');
  });
});
