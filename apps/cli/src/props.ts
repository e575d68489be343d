import { readFileSync } from 'node:fs';
import { usageError } from './command';
import { CliError } from './errors';
import { askValid } from './prompt';
import { note, oneLine } from './output';
import { arr, json, nullable, obj, opt, Shape, str } from './answer-shape';

/** A prop as `GET/POST /v1/components` describes it in `configurable_props`. */
export interface PropDescriptor {
  name: string;
  type: string;
  label?: string;
  description?: string | null;
  default?: unknown;
  optional?: boolean;
  secret?: boolean;
  options?: unknown[] | null;
  min?: number;
  max?: number;
  /** A timer's own schedule (`$.interface.timer` with `static`): the server uses it, whatever is given. */
  static?: unknown;
}

/** What `pd` reads of a descriptor in an answer; the rest is the component author's (any JSON). */
export const PROP_DESCRIPTOR = obj({ name: str, type: str, description: opt(nullable(str)), options: opt(nullable(arr(json))) }) as Shape<unknown> as Shape<PropDescriptor>;

export type PropValues = Record<string, unknown>;

/**
 * Props the platform fills in itself, and app props (the server defaults them to
 * `{ "$auth": {} }`; credentials are given with `--prop app='{"$auth":{…}}'`): never asked for.
 */
const PLATFORM_TYPES = new Set(['$.interface.http', '$.service.db', 'alert', '$.interface.apphook', 'app']);

/** A usage mistake (exit 2), found before anything is read or sent: a `--prop` that is not name=value. */
export function assertPropFlags(command: string, flags: string[]): void {
  const bad = flags.find((flag) => flag.indexOf('=') <= 0);
  if (bad !== undefined) throw usageError(command, `--prop expects name=value, got "${bad}"`);
}

/** `--prop name=value`: the value is JSON when it parses as JSON, a string otherwise. */
export function parsePropFlags(flags: string[]): { values: PropValues; raw: Record<string, string> } {
  const values: PropValues = {};
  const raw: Record<string, string> = {};
  for (const flag of flags) {
    const eq = flag.indexOf('=');
    if (eq <= 0) throw new CliError(`--prop expects name=value, got "${flag}"`);
    const name = flag.slice(0, eq).trim();
    raw[name] = flag.slice(eq + 1);
    values[name] = parseLoose(raw[name]);
  }
  return { values, raw };
}

function parseLoose(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/** `--props file.json`: an object of prop values. */
export function readPropsFile(path: string): PropValues {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read --props file ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new CliError(`--props file ${path} is not valid JSON: ${(e as Error).message}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new CliError(`--props file ${path} must hold a JSON object of prop values`);
  return parsed as PropValues;
}

/**
 * Brings loosely typed flag values to the prop's declared type: `--prop
 * name=123` stays the string "123" for a string prop, `a,b` becomes an array
 * for a `string[]` prop.
 */
export function coerceToDescriptors(values: PropValues, descriptors: PropDescriptor[], rawFlags: Record<string, string>): PropValues {
  const result: PropValues = { ...values };
  for (const d of descriptors) {
    if (!(d.name in rawFlags)) continue;
    const v = rawFlags[d.name];
    const parsed = values[d.name];
    if (d.type === 'string' && typeof parsed !== 'string') result[d.name] = v;
    else if (d.type.endsWith('[]') && !Array.isArray(parsed)) {
      const items = v.split(',').map((s) => s.trim()).filter((s) => s !== '');
      result[d.name] = d.type === 'string[]' ? items : items.map(parseLoose);
    }
  }
  return result;
}

/** True when a prop has no value, no default, is not optional and is not filled by the platform (or by its `static` value). */
export function needsValue(d: PropDescriptor, values: PropValues): boolean {
  if (d.name in values || d.optional || d.default !== undefined || d.static !== undefined) return false;
  return !PLATFORM_TYPES.has(d.type);
}

/**
 * Merges the values given by flags and, for required props still missing,
 * asks on a terminal or fails with a message naming each of them.
 */
export async function completeProps(descriptors: PropDescriptor[], given: PropValues, interactive: boolean): Promise<PropValues> {
  const values: PropValues = { ...given };
  const missing = descriptors.filter((d) => needsValue(d, values));
  if (missing.length === 0) return values;
  if (!interactive) {
    const list = missing.map((d) => `${d.name} (${d.type})`).join(', ');
    throw new CliError(`missing required prop${missing.length > 1 ? 's' : ''}: ${list}; pass --prop name=value or --props file.json`);
  }
  for (const d of missing) values[d.name] = await promptFor(d);
  return values;
}

async function promptFor(d: PropDescriptor): Promise<unknown> {
  const label = oneLine(d.label && d.label !== d.name ? `${d.label} (${d.name})` : d.name);
  if (d.description) note(`  ${oneLine(d.description.split('\n')[0])}`);
  const choices = (d.options ?? []).map((o) => (o && typeof o === 'object' && 'value' in o ? { label: String((o as { label?: unknown }).label ?? (o as { value: unknown }).value), value: (o as { value: unknown }).value } : { label: String(o), value: o }));
  if (choices.length > 0) {
    choices.forEach((c, i) => note(`  ${i + 1}) ${oneLine(c.label)}`));
    return askValid(`${label} [1-${choices.length}]: `, (a) => {
      const n = Number(a.trim());
      if (Number.isInteger(n) && n >= 1 && n <= choices.length) return choices[n - 1].value;
      const hit = choices.find((c) => String(c.value) === a.trim() || c.label === a.trim());
      if (hit) return hit.value;
      throw new Error(`choose a number from 1 to ${choices.length}`);
    });
  }
  switch (d.type) {
    case 'boolean':
      return askValid(`${label} (y/n): `, (a) => {
        if (/^(y|yes|true)$/i.test(a.trim())) return true;
        if (/^(n|no|false)$/i.test(a.trim())) return false;
        throw new Error('answer y or n');
      });
    case 'integer':
      return askValid(`${label} (integer): `, (a) => parseInteger(a, d));
    case '$.interface.timer':
      return askValid(`${label} (interval in seconds, or a cron expression): `, (a) => {
        const t = a.trim();
        if (/^\d+$/.test(t)) return { intervalSeconds: Number(t) };
        if (t.split(/\s+/).length >= 5) return { cron: t };
        throw new Error('enter a number of seconds or a 5-field cron expression');
      });
    case 'string':
      return askValid(`${label}: `, (a) => {
        if (a === '') throw new Error('a value is required');
        return a;
      }, { secret: Boolean(d.secret) });
    case 'string[]':
    case 'integer[]':
    case 'boolean[]':
      return askValid(`${label} (comma-separated or a JSON array): `, (a) => {
        const t = a.trim();
        if (t.startsWith('[')) return JSON.parse(t) as unknown;
        const items = t.split(',').map((s) => s.trim()).filter((s) => s !== '');
        if (items.length === 0) throw new Error('enter at least one value');
        return d.type === 'string[]' ? items : items.map(parseLoose);
      });
    default:
      return askValid(`${label} (JSON): `, (a) => JSON.parse(a) as unknown);
  }
}

function parseInteger(answer: string, d: PropDescriptor): number {
  const n = Number(answer.trim());
  if (answer.trim() === '' || !Number.isInteger(n)) throw new Error('enter an integer');
  if (d.min !== undefined && n < d.min) throw new Error(`must be at least ${d.min}`);
  if (d.max !== undefined && n > d.max) throw new Error(`must be at most ${d.max}`);
  return n;
}
