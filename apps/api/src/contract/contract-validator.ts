import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import { TObject, Type } from '@sinclair/typebox';
import { ApiError, BadRequestError, clipped } from '@app/contracts';
import { bodyOf, COMMON_QUERY, formBodyOf, queryOf, RouteContract } from './route-contract';

export type Where = 'path' | 'query' | 'body';

/** Bodies parsed from `application/x-www-form-urlencoded` fields: text, checked as a query string is. */
const FORM_BODIES = new WeakSet<object>();

/** Marks a parsed form body (its values are text, as a query string's). */
export function markFormBody<T extends object>(form: T): T {
  FORM_BODIES.add(form);
  return form;
}

/** Query strings carry text: `limit=5` is checked as the integer it names (on a copy: handlers read the text). */
const textAjv = new Ajv({ allErrors: true, strict: false, coerceTypes: true });
const jsonAjv = new Ajv({ allErrors: true, strict: false });

function compile(ajv: Ajv, schema: TObject | undefined): ValidateFunction | undefined {
  return schema ? ajv.compile(schema) : undefined;
}

/** The compiled checks of one route, built once at start. */
export class RouteValidator {
  private readonly params?: ValidateFunction;
  private readonly query: ValidateFunction;
  private readonly body?: ValidateFunction;
  private readonly formBody?: ValidateFunction;
  private readonly requiredBodyFields: string[];

  constructor(readonly route: RouteContract) {
    this.params = compile(textAjv, route.params);
    this.query = compile(textAjv, queryOf(route))!;
    // A route that declares no body still gets one checked (Fastify parses bodies of every method but GET and HEAD):
    // only the common parameters may come in it. Ignoring it would drop what the client meant, e.g. `{"start_id"}`.
    const body = bodyOf(route) ?? (route.method === 'GET' ? undefined : Type.Object(COMMON_QUERY, { additionalProperties: false }));
    // A required body field may come in the query string instead: required-ness is checked on both together.
    this.requiredBodyFields = body?.required ?? [];
    this.body = compile(jsonAjv, body ? { ...body, required: [] } : undefined);
    this.formBody = compile(textAjv, formBodyOf(route));
  }

  /** Throws the 400 a client gets for input the declaration does not allow. */
  validate(params: unknown, query: unknown, body: unknown): void {
    if (this.params) checkText(this.params, structuredClone((params ?? {}) as Record<string, unknown>), 'path');
    const q = (query ?? {}) as Record<string, unknown>;
    checkText(this.query, structuredClone(q), 'query');
    if (!this.body) return;
    if (body === undefined) {
      if (this.route.bodyRequired) throw new BadRequestError('a JSON object body is required', { in: 'body' });
    } else if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new BadRequestError('the request body must be a JSON object', { in: 'body' });
    } else if (this.route.bodyOnly && FORM_BODIES.has(body)) {
      // Its fields are JSON (an event, a definition): a form's text fields would be read as strings they do not say they are.
      throw new ApiError(415, 'unsupported_media_type', `a form (application/x-www-form-urlencoded) is not accepted on this route: send the request body as ${JSON_ONLY}`, { header: 'content-type' });
    } else if (this.formBody && FORM_BODIES.has(body)) checkText(this.formBody, structuredClone(body as Record<string, unknown>), 'body');
    else check(this.body, body, 'body');
    const b = (body ?? {}) as Record<string, unknown>;
    const missing = this.requiredBodyFields.filter((f) => b[f] === undefined && q[f] === undefined);
    // Such fields may come in the body or in the query: a request without a body was missing them in its query.
    if (missing.length) throw new BadRequestError(`${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} required`, { in: body === undefined ? 'query' : 'body', fields: missing });
  }
}

/** The bodies a route whose fields come from a JSON body only (`bodyOnly`) reads. */
const JSON_ONLY = 'application/json (or a type ending in +json, or text/plain holding JSON)';

/** A number as a query string or path writes it: digits, with a sign and a fraction only where the declaration allows them. */
const INTEGER_TEXT = /^-?\d+$/;
const NUMBER_TEXT = /^-?\d+(\.\d+)?$/;

/** The 400 of a parameter or form field given twice: never one of its values picked. */
export function givenMoreThanOnce(name: string, where: Where): BadRequestError {
  return new BadRequestError(`${name} was given more than once`, { in: where, field: name });
}

/**
 * Text checked as what it names: before coercion, a declared number must be written as one (Ajv would take
 * `+1`, `01.0`, ` 1` or `1\u202f` as 1, and an empty or blank value as 0), and a parameter declared once must be
 * given once (the query string parser makes an array of a repeated name, whatever the declaration's type).
 */
function checkText(validate: ValidateFunction, data: Record<string, unknown>, where: Where): void {
  const declared = ((validate.schema as TObject).properties ?? {}) as Record<string, { type?: unknown }>;
  for (const [name, value] of Object.entries(data)) {
    if (!Object.prototype.hasOwnProperty.call(declared, name)) continue;
    const type = declared[name].type;
    if (Array.isArray(value) && type !== 'array') throw givenMoreThanOnce(name, where);
    if (typeof value !== 'string') continue;
    if ((type === 'integer' && !INTEGER_TEXT.test(value)) || (type === 'number' && !NUMBER_TEXT.test(value))) {
      throw new BadRequestError(`${name} must be ${type === 'integer' ? 'an integer' : 'a number'} written in digits`, { in: where, field: name, value: clipped(value) });
    }
  }
  check(validate, data, where);
}

/** Unknown names an error lists (each `clipped`): a body of 400,000 unknown keys is answered in a few hundred bytes. */
const MAX_UNKNOWN_LISTED = 20;

function check(validate: ValidateFunction, data: unknown, where: Where): void {
  // Unknown top-level names first, in one pass: Ajv (allErrors) would build an error object for each.
  const declared = (validate.schema as TObject).properties ?? {};
  if (data !== null && typeof data === 'object' && !Array.isArray(data)) {
    const unknown = Object.keys(data).filter((k) => !Object.prototype.hasOwnProperty.call(declared, k));
    if (unknown.length) throw unknownNames(unknown, where, Object.keys(declared));
  }
  if (validate(data)) return;
  const errors = validate.errors ?? [];
  const unknown = errors.filter((e) => e.keyword === 'additionalProperties' && e.instancePath === '').map((e) => String(e.params.additionalProperty));
  if (unknown.length) throw unknownNames(unknown, where, Object.keys(declared));
  const first = errors[0];
  if (first?.keyword === 'const') {
    // A union of literals (`"$errors" | "$logs"`): name the choices rather than the first one missed.
    const choices = errors.filter((e) => e.keyword === 'const' && e.instancePath === first.instancePath).map((e) => JSON.stringify(e.params.allowedValue));
    throw new BadRequestError(`${fieldOf(first)} must be one of ${choices.join(', ')}`, { in: where, field: fieldOf(first), allowed: choices.map((c) => JSON.parse(c) as unknown) });
  }
  // A text of a declared form (`pattern`, `minLength`) is described in words (`x-expected`) where the schema gives
  // them, never by its regular expression.
  const expected = first?.keyword === 'pattern' || first?.keyword === 'minLength' ? schemaAt(validate.schema, first.schemaPath)?.['x-expected'] : undefined;
  if (typeof expected === 'string') throw new BadRequestError(`${fieldOf(first)} must be ${expected}`, { in: where, field: fieldOf(first) });
  throw new BadRequestError(describe(first, where), { in: where, field: fieldOf(first), errors: errors.slice(0, 10).map((e) => ({ field: fieldOf(e), rule: e.keyword, message: e.message ?? 'is not valid' })) });
}

/** The schema holding the keyword an error's `schemaPath` (`#/properties/start_id/pattern`) points at. */
function schemaAt(root: unknown, schemaPath: string): Record<string, unknown> | undefined {
  let at: unknown = root;
  for (const part of schemaPath.split('/').slice(1, -1)) at = at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
  return at !== null && typeof at === 'object' ? (at as Record<string, unknown>) : undefined;
}

function unknownNames(unknown: string[], where: Where, allowed: string[]): BadRequestError {
  const word = where === 'body' ? 'field' : where === 'query' ? 'query parameter' : 'path parameter';
  const listed = unknown.slice(0, MAX_UNKNOWN_LISTED).map(clipped);
  const more = unknown.length - listed.length;
  const message = `unknown ${word}${unknown.length > 1 ? 's' : ''}: ${listed.join(', ')}${more ? ` and ${more} more` : ''}`;
  return new BadRequestError(message, { in: where, fields: listed, ...(more ? { more } : {}), allowed });
}

function fieldOf(e: ErrorObject | undefined): string {
  if (!e) return '';
  const path = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (e.keyword === 'required') return [path, String(e.params.missingProperty)].filter(Boolean).join('.');
  return path;
}

function describe(e: ErrorObject | undefined, where: Where): string {
  if (!e) return `the ${where} is not valid`;
  const field = fieldOf(e) || (where === 'body' ? 'the request body' : where);
  if (e.keyword === 'required') return `${field} is required`;
  if (e.keyword === 'type') {
    const type = String(e.params.type);
    const article = /^[aeiou]/.test(type) ? 'an' : 'a';
    return `${field} must be ${article} ${type}`;
  }
  return `${field} ${e.message ?? 'is not valid'}`;
}
