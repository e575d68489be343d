import { BadRequestError } from '@app/contracts';
import { assertJsonTextLimits } from './json-limits';

/**
 * Request input helpers. Parameters may come in the query or the JSON body
 * (the spec allows both for POST); unknown fields are rejected so owner and ids
 * can never be mass-assigned.
 */
export type Input = Record<string, unknown>;

export const COMMON_PARAMS = ['include', 'exclude', 'org_id'];

/** Merges query and body (body wins) and rejects fields not in `allowed`. */
export function readInput(query: unknown, body: unknown, allowed: string[]): Input {
  if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body))) {
    throw new BadRequestError('the request body must be a JSON object');
  }
  const merged: Input = { ...((query as Input) ?? {}), ...((body as Input) ?? {}) };
  const unknown = Object.keys(merged).filter((k) => !allowed.includes(k) && !COMMON_PARAMS.includes(k));
  if (unknown.length) {
    throw new BadRequestError(`unknown field${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`, { fields: unknown, allowed });
  }
  return merged;
}

export function optionalString(input: Input, name: string, { nullable = false, maxLength = 10_000 } = {}): string | undefined | null {
  const v = input[name];
  if (v === undefined) return undefined;
  if (v === null && nullable) return null;
  if (typeof v !== 'string') throw new BadRequestError(`${name} must be a string`, { field: name });
  if (v.length > maxLength) throw new BadRequestError(`${name} must be at most ${maxLength} characters`, { field: name });
  return v;
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
 * when a client passes it in the query string of a POST or PUT (the spec allows either place).
 */
export function objectParam(input: Input, name: string): unknown {
  const v = input[name];
  if (typeof v !== 'string') return v;
  assertJsonTextLimits(v, name);
  try {
    const parsed: unknown = JSON.parse(v);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed;
  } catch {
    /* not JSON: reported below */
  }
  throw new BadRequestError(`${name} must be an object (in the query string: its JSON text)`, { field: name });
}
