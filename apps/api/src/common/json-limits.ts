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

/** Rejects NUL characters in a string that will reach Postgres (ids, names, cursors). */
export function assertNoNul(value: string, what: string): void {
  if (value.includes('\u0000')) throw nulError(what);
}

function nulError(what: string): BadRequestError {
  return new BadRequestError(`${what} contains a NUL character (\\u0000), which is not accepted`, { reason: 'nul_character' });
}
