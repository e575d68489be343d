import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import { TObject } from '@sinclair/typebox';
import { BadRequestError } from '@app/contracts';
import { bodyOf, queryOf, RouteContract } from './route-contract';

type Where = 'path' | 'query' | 'body';

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
  private readonly requiredBodyFields: string[];

  constructor(readonly route: RouteContract) {
    this.params = compile(textAjv, route.params);
    this.query = compile(textAjv, queryOf(route))!;
    const body = bodyOf(route);
    // A required body field may come in the query string instead: required-ness is checked on both together.
    this.requiredBodyFields = body?.required ?? [];
    this.body = compile(jsonAjv, body ? { ...body, required: [] } : undefined);
  }

  /** Throws the 400 a client gets for input the declaration does not allow. */
  validate(params: unknown, query: unknown, body: unknown): void {
    if (this.params) check(this.params, structuredClone(params ?? {}), 'path');
    const q = (query ?? {}) as Record<string, unknown>;
    check(this.query, structuredClone(q), 'query');
    if (!this.body) return;
    if (body === undefined) {
      if (this.route.bodyRequired) throw new BadRequestError('a JSON object body is required', { in: 'body' });
    } else if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new BadRequestError('the request body must be a JSON object', { in: 'body' });
    } else check(this.body, body, 'body');
    const b = (body ?? {}) as Record<string, unknown>;
    const missing = this.requiredBodyFields.filter((f) => b[f] === undefined && q[f] === undefined);
    if (missing.length) throw new BadRequestError(`${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} required`, { in: 'body', fields: missing });
  }
}

function check(validate: ValidateFunction, data: unknown, where: Where): void {
  if (validate(data)) return;
  const errors = validate.errors ?? [];
  const unknown = errors.filter((e) => e.keyword === 'additionalProperties' && e.instancePath === '').map((e) => String(e.params.additionalProperty));
  if (unknown.length) {
    const word = where === 'body' ? 'field' : where === 'query' ? 'query parameter' : 'path parameter';
    const allowed = Object.keys(((validate.schema as TObject).properties ?? {}) as object);
    throw new BadRequestError(`unknown ${word}${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`, { in: where, fields: unknown, allowed });
  }
  const first = errors[0];
  if (first?.keyword === 'const') {
    // A union of literals (`"$errors" | "$logs"`): name the choices rather than the first one missed.
    const choices = errors.filter((e) => e.keyword === 'const' && e.instancePath === first.instancePath).map((e) => JSON.stringify(e.params.allowedValue));
    throw new BadRequestError(`${fieldOf(first)} must be one of ${choices.join(', ')}`, { in: where, field: fieldOf(first), allowed: choices.map((c) => JSON.parse(c) as unknown) });
  }
  throw new BadRequestError(describe(first, where), { in: where, field: fieldOf(first), errors: errors.slice(0, 10).map((e) => ({ field: fieldOf(e), rule: e.keyword, message: e.message ?? 'is not valid' })) });
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
