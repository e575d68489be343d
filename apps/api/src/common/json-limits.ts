import { BadRequestError } from '@app/contracts';

/** Deepest nesting of arrays and objects accepted in a JSON body or a JSON-text parameter (docs/api.md). */
export const JSON_MAX_DEPTH = 100;

/**
 * Checks JSON text before it is parsed, in one pass without recursion: nesting deeper than
 * `maxDepth` and NUL characters (`\u0000`, which Postgres text and jsonb cannot store) are the
 * client's error (400), not a stack overflow or a database error later.
 */
export function assertJsonTextLimits(text: string, what = 'the request body', maxDepth = JSON_MAX_DEPTH): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c /* \ */) {
        if (text.startsWith('u0000', i + 1)) throw nulError(what);
        i++;
      } else if (ch === 0x22 /* " */) inString = false;
      else if (ch === 0) throw nulError(what);
      continue;
    }
    if (ch === 0x22) inString = true;
    else if (ch === 0x5b /* [ */ || ch === 0x7b /* { */) {
      if (++depth > maxDepth) throw new BadRequestError(`${what} is nested deeper than ${maxDepth} levels`, { max_depth: maxDepth });
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
}

/** Rejects NUL characters in a string that will reach Postgres (ids, names, cursors). */
export function assertNoNul(value: string, what: string): void {
  if (value.includes('\u0000')) throw nulError(what);
}

function nulError(what: string): BadRequestError {
  return new BadRequestError(`${what} contains a NUL character (\\u0000), which is not accepted`, { reason: 'nul_character' });
}
