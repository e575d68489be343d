// A small JavaScript tokenizer for the code editor's highlighting: comments, strings (template
// literals included), numbers, keywords and property names. It only colours text; the textarea
// above it holds the code.
const KEYWORDS = new Set(
  'async await break case catch class const continue debugger default delete do else export extends false finally for from function if import in instanceof let new null of return static super switch this throw true try typeof undefined var void while with yield'.split(' '),
);

const TOKEN = /(\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$))|("(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|`(?:[^`\\]|\\[\s\S])*`?)|(\b\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?\b|\b0x[\da-f]+\b)|([A-Za-z_$][\w$]*)(\s*:(?!:))?/gi;

export interface Token {
  text: string;
  kind?: 'comment' | 'string' | 'number' | 'keyword' | 'property';
}

export function tokenize(code: string): Token[] {
  const out: Token[] = [];
  let last = 0;
  for (const m of code.matchAll(TOKEN)) {
    const at = m.index ?? 0;
    if (at > last) out.push({ text: code.slice(last, at) });
    if (m[1]) out.push({ text: m[1], kind: 'comment' });
    else if (m[2]) out.push({ text: m[2], kind: 'string' });
    else if (m[3]) out.push({ text: m[3], kind: 'number' });
    else if (m[4]) {
      if (KEYWORDS.has(m[4])) out.push({ text: m[4], kind: 'keyword' });
      else if (m[5]) out.push({ text: m[4], kind: 'property' });
      else out.push({ text: m[4] });
      if (m[5]) out.push({ text: m[5] });
    }
    last = at + m[0].length;
  }
  if (last < code.length) out.push({ text: code.slice(last) });
  return out;
}
