/**
 * Declared shapes of the API's answers. `pd` talks to whatever server `api_base_url` names: an answer is
 * read through the shape of what the command uses (the fields it reads and their types), so a server that
 * answers 200 with something else ends the command with `unexpected answer from GET <url>: data.id is not
 * a string` instead of a TypeError, a loop or a misleading result. Objects are checked, not copied: the
 * fields a shape does not declare stay as the server sent them (`--json` prints the API's JSON).
 */

/** Checks `value`, found at `at` (`data[0].id`), and returns it typed; throws a ShapeError otherwise. */
export type Shape<T> = (value: unknown, at: string) => T;
export type ShapeOf<S> = S extends Shape<infer T> ? T : never;

/** What is wrong with an answer, and where: `data.id is not a string`. */
export class ShapeError extends Error {}

/**
 * The deepest nesting of arrays and objects read from an answer: far more than the API stores (it takes request
 * bodies 100 deep), and printing much deeper JSON (JSON.stringify recurses) would overflow the stack.
 */
const MAX_ANSWER_DEPTH = 1000;

const wrong = (at: string, what: string): ShapeError => new ShapeError(`${at} is not ${what}`);

const typed = <T>(what: string, test: (v: unknown) => boolean): Shape<T> => (v, at) => {
  if (!test(v)) throw wrong(at, what);
  return v as T;
};

export const str = typed<string>('a string', (v) => typeof v === 'string');
export const num = typed<number>('a number', (v) => typeof v === 'number' && Number.isFinite(v));
export const bool = typed<boolean>('a boolean', (v) => typeof v === 'boolean');
/** Any JSON value (its depth is checked once for the whole answer). */
export const json: Shape<unknown> = (v) => v;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** An object of any fields. */
export const dict = typed<Record<string, unknown>>('a JSON object', isObject);

/** A field the server may leave out. */
export const opt = <T>(shape: Shape<T>): Shape<T | undefined> => (v, at) => (v === undefined ? undefined : shape(v, at));

export const nullable = <T>(shape: Shape<T>): Shape<T | null> => (v, at) => (v === null ? null : shape(v, at));

/** An array of at most `max` items (a page never holds more than the `limit` asked for). */
export const arr = <T>(item: Shape<T>, max = Infinity): Shape<T[]> => (v, at) => {
  if (!Array.isArray(v)) throw wrong(at, 'an array');
  if (v.length > max) throw new ShapeError(`${at} has ${v.length} items, more than the ${max} asked for`);
  v.forEach((x, i) => item(x, `${at}[${i}]`));
  return v as T[];
};

type Fields = Record<string, Shape<unknown>>;
type Optional<F extends Fields> = { [K in keyof F]: undefined extends ShapeOf<F[K]> ? K : never }[keyof F];
/** The declared fields, typed; the others are as the server sent them. */
export type ObjectOf<F extends Fields> = { [K in Exclude<keyof F, Optional<F>>]: ShapeOf<F[K]> } & { [K in Optional<F>]?: ShapeOf<F[K]> } & Record<string, unknown>;

const field = (at: string, key: string): string => (at ? `${at}.${key}` : key);

/** An object with (at least) these fields. */
export const obj = <F extends Fields>(fields: F): Shape<ObjectOf<F>> => (v, at) => {
  if (!isObject(v)) throw wrong(at || 'the answer', 'a JSON object');
  for (const [k, shape] of Object.entries(fields)) shape(v[k], field(at, k));
  return v as ObjectOf<F>;
};

/** `{ data: <shape> }`, the envelope of the API's answers. */
export const data = <T>(shape: Shape<T>): Shape<{ data: T }> => obj({ data: shape as Shape<unknown> }) as Shape<{ data: T }>;

/** Where `value` nests deeper than MAX_ANSWER_DEPTH (named by its first three levels: `data[0].event`), if it does; read without recursion. */
function tooDeep(value: unknown): string | undefined {
  const stack: Array<{ v: unknown; at: string; depth: number }> = [{ v: value, at: '', depth: 0 }];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const { v, at, depth } = next;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_ANSWER_DEPTH) return at;
    const name = (child: string): string => (depth < 3 ? child : at);
    if (Array.isArray(v)) v.forEach((x, i) => stack.push({ v: x, at: name(`${at}[${i}]`), depth: depth + 1 }));
    else for (const [k, x] of Object.entries(v)) stack.push({ v: x, at: name(field(at, k)), depth: depth + 1 });
  }
  return undefined;
}

/** Reads a parsed answer (or event stream message) through its shape; a ShapeError says what is wrong, by path from the top (`data.id`). */
export function readShape<T>(value: unknown, shape: Shape<T>): T {
  const deep = tooDeep(value);
  if (deep !== undefined) throw new ShapeError(`${deep || 'the answer'} is nested deeper than ${MAX_ANSWER_DEPTH} levels`);
  return shape(value, '');
}
