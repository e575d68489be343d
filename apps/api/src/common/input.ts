import { BadRequestError, longerThan } from '@app/contracts';
import { assertFiniteNumbers, assertJsonTextLimits, repeatedJsonKey } from './json-limits';

/**
 * Request input helpers. Which parameters a route takes, and their types, are declared in its contract
 * (`<context>.contract.ts`) and checked before the handler runs; these read the checked values.
 * Parameters of a POST/PUT may come in the query or the JSON body (the spec allows both).
 */
export type Input = Record<string, unknown>;

/** Query and body as one set of parameters (body wins). */
export function mergeInput(query: unknown, body: unknown): Input {
  const b = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Input) : {};
  return { ...((query as Input) ?? {}), ...b };
}

export function optionalString(input: Input, name: string, { nullable = false, maxLength = 10_000 } = {}): string | undefined | null {
  const v = input[name];
  if (v === undefined) return undefined;
  if (v === null && nullable) return null;
  if (typeof v !== 'string') throw new BadRequestError(`${name} must be a string`, { field: name });
  if (longerThan(v, maxLength)) throw new BadRequestError(`${name} must be at most ${maxLength} characters`, { field: name });
  return v;
}

/**
 * Required parameters given empty (`?emitter_id=&listener_id=`) are missing, and said so as the route's schema says
 * it of absent ones: every one in `details.fields`, `details.in` where they were given (absent: `query` for a request
 * without a body, else `body`).
 */
export function requireNonEmpty(query: unknown, body: unknown, names: string[]): void {
  const input = mergeInput(query, body);
  const empty = names.filter((n) => isEmpty(input[n]));
  if (empty.length) throw missingError(`${empty.join(', ')} ${empty.length > 1 ? 'are' : 'is'} required`, query, body, empty);
}

const isEmpty = (v: unknown): boolean => v === undefined || v === null || v === '';

function missingError(message: string, query: unknown, body: unknown, fields: string[]): BadRequestError {
  return new BadRequestError(message, { in: missingIn(query, body, fields), fields });
}

/** Where missing `fields` were looked for: where one was given empty, else the query of a request without a body, else its body. */
export function missingIn(query: unknown, body: unknown, fields: string[]): 'query' | 'body' {
  const given = (from: unknown) => from !== null && typeof from === 'object' && fields.some((n) => Object.hasOwn(from, n));
  return given(body) ? 'body' : given(query) || body === undefined ? 'query' : 'body';
}

export function requiredString(input: Input, name: string, opts: { maxLength?: number } = {}): string {
  const v = optionalString(input, name, opts);
  if (v === undefined || v === null || v === '') throw new BadRequestError(`${name} is required`, { field: name });
  return v;
}

export function optionalBoolean(input: Input, name: string): boolean | undefined {
  const v = input[name];
  if (v === undefined) return undefined;
  if (typeof v === 'boolean') return v;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new BadRequestError(`${name} must be true or false`, { field: name });
}

/**
 * An object parameter (`configured_props`): a JSON object in the body, or the JSON text of one
 * when a client passes it in the query string of a POST or PUT (the spec allows either place) or in a form body.
 * Its errors say where it came from (`details.in`) and name a nested key by its path from the top, as a JSON body's do.
 */
export function objectParam(query: unknown, body: unknown, name: string): unknown {
  const v = mergeInput(query, body)[name];
  if (typeof v !== 'string') return v;
  const where = missingIn(query, body, [name]);
  assertJsonTextLimits(v, name);
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    /* not JSON: reported below */
  }
  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
    assertFiniteNumbers(parsed, name, name);
    // As in a JSON body: a key given twice is refused, never its last value kept (`{"a":1,"a":2}` was `{"a":2}`).
    const repeated = repeatedJsonKey(v);
    if (repeated !== undefined) throw new BadRequestError(`${name}.${repeated} was given more than once`, { in: where, field: `${name}.${repeated}` });
    return parsed;
  }
  // `details.errors` as the route contract gives it for the same value in a JSON body (`"configured_props": 5`).
  throw new BadRequestError(`${name} must be an object (in the query string: its JSON text)`, { in: where, field: name, errors: [{ field: name, rule: 'type', message: 'must be object' }] });
}
