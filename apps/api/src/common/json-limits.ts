import { BadRequestError, jsonTextProblem } from '@app/contracts';

/** Deepest nesting of arrays and objects accepted in a JSON body or a JSON-text parameter (docs/api.md). */
export const JSON_MAX_DEPTH = 100;

/**
 * Checks JSON text before it is parsed: nesting deeper than `maxDepth` and NUL characters are the
 * client's error (400), not a stack overflow or a database error later.
 */
export function assertJsonTextLimits(text: string, what = 'the request body', maxDepth = JSON_MAX_DEPTH): void {
  const problem = jsonTextProblem(text, maxDepth, true);
  if (problem === 'nul') throw nulError(what);
  if (problem === 'surrogate') throw new BadRequestError(`${what} contains a lone UTF-16 surrogate (a \\ud800–\\udfff escape without its other half), which is not accepted`, { reason: 'lone_surrogate' });
  if (problem === 'depth') throw new BadRequestError(`${what} is nested deeper than ${maxDepth} levels`, { max_depth: maxDepth });
}

/**
 * Rejects a number too large for a double (`1e400`, 400 digits): JSON.parse reads it as Infinity, which every later
 * JSON.stringify (Postgres, NATS, the sandbox) writes as null, so what was stored would not be what was sent.
 * Called on parsed JSON, which is at most JSON_MAX_DEPTH deep (checked on its text first).
 */
export function assertFiniteNumbers(value: unknown, what = 'the request body', path = ''): void {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new BadRequestError(`${what} holds a number too large to be represented${path ? ` at ${path}` : ''}`, { reason: 'number_out_of_range', ...(path ? { path } : {}) });
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => assertFiniteNumbers(v, what, `${path}[${i}]`));
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) assertFiniteNumbers(v, what, path ? `${path}.${k}` : k);
  }
}

/** Rejects NUL characters in a string that will reach Postgres (ids, names, cursors). */
export function assertNoNul(value: string, what: string): void {
  if (value.includes('\u0000')) throw nulError(what);
}

function nulError(what: string): BadRequestError {
  return new BadRequestError(`${what} contains a NUL character (\\u0000), which is not accepted`, { reason: 'nul_character' });
}

interface JsonFrame {
  /** The keys of this object so far; undefined in an array. */
  keys?: Set<string>;
  /** The key or the index being read, for the path of a repeated key. */
  at: string | number;
}

/**
 * The first key given twice in one object of `text` (JSON that parsed), as its path from the top (`name`,
 * `configured_props.a`, `list[1].b`), or undefined. JSON.parse keeps the last value of a repeated key, where a
 * repeated query parameter or form field is refused (docs/api.md): one linear scan, no recursion.
 */
export function repeatedJsonKey(text: string): string | undefined {
  const stack: JsonFrame[] = [];
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      const start = i;
      // The closing quote: the next one not escaped (after an even run of backslashes). indexOf keeps long strings cheap.
      for (;;) {
        i = text.indexOf('"', i + 1);
        if (i < 0) return undefined;
        let b = i - 1;
        while (text.charCodeAt(b) === 0x5c /* \ */) b--;
        if ((i - 1 - b) % 2 === 0) break;
      }
      const top = stack[stack.length - 1];
      if (!top?.keys) continue; // a string in an array, or the whole text
      let j = i + 1;
      while (text.charCodeAt(j) <= 0x20) j++;
      if (text.charCodeAt(j) !== 0x3a /* : */) continue; // a value, not a key
      const raw = text.slice(start + 1, i);
      const key = raw.includes('\\') ? (JSON.parse(text.slice(start, i + 1)) as string) : raw;
      top.at = key;
      if (top.keys.has(key)) return pathOf(stack);
      top.keys.add(key);
    } else if (ch === 0x7b /* { */) stack.push({ keys: new Set(), at: '' });
    else if (ch === 0x5b /* [ */) stack.push({ at: 0 });
    else if (ch === 0x7d /* } */ || ch === 0x5d /* ] */) stack.pop();
    else if (ch === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top && !top.keys) (top.at as number)++;
    }
  }
  return undefined;
}

function pathOf(stack: JsonFrame[]): string {
  let path = '';
  for (const frame of stack) {
    if (typeof frame.at === 'number') path += `[${frame.at}]`;
    else path += path === '' ? frame.at : `.${frame.at}`;
  }
  return path;
}
