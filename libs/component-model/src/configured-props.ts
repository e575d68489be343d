import { Cron } from 'croner';
import { BadRequestError, clipped, PayloadTooLargeError, TIMER_MAX_INTERVAL_SECONDS } from '@app/contracts';
import type { ConfigurableProp, PropOption } from './analyze-component';
import { INTERFACE_HTTP, INTERFACE_TIMER, isSystemType, SERVICE_DB } from './prop-types';

export interface ConfiguredPropsLimits {
  /** Smallest `intervalSeconds` a timer may use. */
  timerMinIntervalSeconds: number;
  /** Largest value of one prop (the spec's "static prop value size: 64KB at most"): a string's UTF-8 bytes, else its JSON bytes. */
  propsMaxBytes: number;
  /** Largest `configured_props` document, all values together (JSON bytes). */
  propsDocumentMaxBytes: number;
}

/** How values are read besides the limits. */
export interface ConfiguredPropsOptions {
  /**
   * Values known only at run time (a workflow step's `{{ … }}` templates): stored as given, not checked.
   * Applies to a prop's whole value and to each element of an array prop.
   */
  deferred?: (value: unknown) => boolean;
}

/** A timer's stored value: an interval or a cron expression. */
export type TimerValue = { intervalSeconds: number } | { cron: string; timezone?: string };

/** A 400 naming the prop (`details.prop`), and the element of an array prop it is about (`details.path`: `tags[1]`). */
function fail(prop: string, message: string, at: string = prop): never {
  throw new BadRequestError(`configured_props.${at}: ${message}`, at === prop ? { prop } : { prop, path: at }, 'invalid_props');
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Where in `v` an object holds a `$enc` string — the form the platform stores an encrypted value in (a secret prop,
 * an app's `$auth`), which the runner decrypts wherever it finds it in stored props — or undefined. A value given in
 * that form was taken for an encrypted one: a deploy that read it back failed (500), and a run decrypted it.
 */
export function encryptedFormAt(v: unknown, path: string): string | undefined {
  if (Array.isArray(v)) {
    for (const [i, x] of v.entries()) {
      const at = encryptedFormAt(x, `${path}[${i}]`);
      if (at !== undefined) return at;
    }
  } else if (isPlainObject(v)) {
    if (typeof v.$enc === 'string') return path;
    for (const [k, x] of Object.entries(v)) {
      const at = encryptedFormAt(x, `${path}.${clipped(k)}`);
      if (at !== undefined) return at;
    }
  }
  return undefined;
}

function optionValues(options: PropOption[]): unknown[] {
  return options.map((o) => (typeof o === 'object' && o !== null ? o.value : o));
}

/**
 * The longest cron expression taken: every minute, hour, day, month and weekday written out is under 400 characters.
 * A cron is parsed whenever its source is shown (`interval_seconds`); one as long as a prop value (64 KB) cost 7 ms.
 */
export const CRON_MAX_LENGTH = 1000;

/** Unknown prop names an error lists at most (as unknown body fields: contract-validator's MAX_UNKNOWN_LISTED). */
const UNKNOWN_PROPS_LISTED = 20;

/** Checks a 5-field cron expression and optional IANA timezone; returns the error text or undefined (quoting them clipped). */
export function cronProblem(cron: string, timezone?: string): string | undefined {
  if (cron.length > CRON_MAX_LENGTH) return `cron must be at most ${CRON_MAX_LENGTH} characters`;
  if (cron.trim().split(/\s+/).length !== 5) return `cron must have 5 fields (minute hour day-of-month month day-of-week), got "${clipped(cron)}"`;
  try {
    const job = new Cron(cron, { paused: true, timezone });
    if (!job.nextRun()) return `cron "${clipped(cron)}" never fires`;
  } catch (e) {
    return timezone && /timezone/i.test((e as Error).message) ? `unknown timezone "${clipped(timezone)}"` : `invalid cron "${clipped(cron)}": ${clipped((e as Error).message)}`;
  }
  return undefined;
}

/** Seconds between the next two firings of a cron expression (the `interval_seconds` shown for cron timers). */
export function cronIntervalSeconds(cron: string, timezone?: string): number | null {
  try {
    const [a, b] = new Cron(cron, { paused: true, timezone }).nextRuns(2);
    return a && b ? Math.round((b.getTime() - a.getTime()) / 1000) : null;
  } catch {
    return null;
  }
}

/**
 * Why `raw` is no timer value (`{ intervalSeconds }` from `minIntervalSeconds` up, or a `{ cron, timezone? }` that
 * fires), or undefined: a source's timer and a component's own timer `default` or `static` are checked alike.
 */
export function timerProblem(raw: unknown, minIntervalSeconds: number): string | undefined {
  if (!isPlainObject(raw)) return 'a timer takes { intervalSeconds } or { cron, timezone? }';
  const unknown = Object.keys(raw).filter((k) => !['intervalSeconds', 'interval_seconds', 'cron', 'timezone'].includes(k));
  if (unknown.length) return `unknown timer field${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; use intervalSeconds or cron (+ timezone)`;
  const { cron, timezone } = raw;
  if (cron !== undefined && cron !== null) {
    if (typeof cron !== 'string') return 'cron must be a string';
    if (timezone !== undefined && timezone !== null && typeof timezone !== 'string') return 'timezone must be a string';
    return cronProblem(cron, timezone ?? undefined);
  }
  if (timezone !== undefined && timezone !== null) return 'timezone applies to cron only';
  const interval = raw.intervalSeconds ?? raw.interval_seconds;
  if (!Number.isInteger(interval)) return 'a timer needs intervalSeconds (integer) or cron (string)';
  if ((interval as number) < minIntervalSeconds) return `intervalSeconds must be at least ${minIntervalSeconds}, got ${interval as number}`;
  if ((interval as number) > TIMER_MAX_INTERVAL_SECONDS) return `intervalSeconds must be at most ${TIMER_MAX_INTERVAL_SECONDS} (366 days), got ${interval as number}`;
  return undefined;
}

function timerValue(name: string, raw: unknown, limits: ConfiguredPropsLimits): TimerValue {
  const problem = timerProblem(raw, limits.timerMinIntervalSeconds);
  if (problem) fail(name, problem);
  const { cron, timezone, intervalSeconds, interval_seconds } = raw as Record<string, unknown>;
  if (typeof cron === 'string') return typeof timezone === 'string' && timezone ? { cron: cron.trim(), timezone } : { cron: cron.trim() };
  return { intervalSeconds: (intervalSeconds ?? interval_seconds) as number };
}

/**
 * A timer's schedule chosen by its component (`static` or `default`), not by the client: an interval under
 * `TIMER_MIN_INTERVAL_SECONDS` is not refused (the source could not be deployed without a value) but raised
 * to the minimum, so no component code runs a source more often than the operator allows.
 */
function ownSchedule(prop: ConfigurableProp, schedule: unknown, limits: ConfiguredPropsLimits): unknown {
  const v = value(prop, schedule, { ...limits, timerMinIntervalSeconds: 1 }) as TimerValue;
  return 'intervalSeconds' in v && v.intervalSeconds < limits.timerMinIntervalSeconds ? { intervalSeconds: limits.timerMinIntervalSeconds } : v;
}

/** A value as an error names it (`clipped`): a secret prop's only by its kind (an answer or a log never repeats a secret). */
function shown(prop: ConfigurableProp, v: unknown): string {
  if (!prop.secret) return clipped(JSON.stringify(v));
  return v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

function scalar(prop: ConfigurableProp, base: string, v: unknown, where: string): unknown {
  switch (base) {
    case 'boolean':
      if (typeof v !== 'boolean') fail(prop.name, `must be a boolean, got ${shown(prop, v)}`, where);
      return v;
    case 'integer':
      if (typeof v !== 'number' || !Number.isInteger(v)) fail(prop.name, `must be an integer, got ${shown(prop, v)}`, where);
      if (prop.min !== undefined && v < prop.min) fail(prop.name, `must be at least ${prop.min}, got ${shown(prop, v)}`, where);
      if (prop.max !== undefined && v > prop.max) fail(prop.name, `must be at most ${prop.max}, got ${shown(prop, v)}`, where);
      return v;
    case 'string':
      if (typeof v !== 'string') fail(prop.name, `must be a string, got ${shown(prop, v)}`, where);
      return v;
    default:
      return v;
  }
}

/**
 * Static options are what a value must be one of, with Pipedream's exceptions: the prop's own
 * `default` (used whether or not it is an option), and `""` on an optional prop (nothing chosen).
 */
function checkMembership(prop: ConfigurableProp, v: unknown, where: string): void {
  if (!prop.options || prop.options.length === 0) return;
  if (prop.default !== undefined && JSON.stringify(prop.default) === JSON.stringify(v)) return;
  if (v === '' && prop.optional === true) return;
  if (!allowedJson(prop.options).has(JSON.stringify(v))) {
    fail(prop.name, `${prop.secret ? 'the secret value' : clipped(JSON.stringify(v))} is not one of the options: ${optionValues(prop.options).map((a) => JSON.stringify(a)).join(', ')}`, where);
  }
}

/**
 * The JSON of a prop's option values, as a set built once per options list: each value of an array prop was compared
 * with every option, each stringified again, and a component's 100,000 options against a deploy's 100,000 values held
 * the api's thread for good (both sides are the deployer's choice).
 */
const allowedSets = new WeakMap<PropOption[], Set<string>>();
function allowedJson(options: PropOption[]): Set<string> {
  let set = allowedSets.get(options);
  if (!set) allowedSets.set(options, (set = new Set(optionValues(options).map((a) => JSON.stringify(a)))));
  return set;
}

/** `{ label, value }` of Pipedream's label-value form, or undefined when `v` is not one. */
function labelValue(v: unknown): { label: unknown; value: unknown } | undefined {
  return isPlainObject(v) && 'value' in v && Object.keys(v).every((k) => k === 'label' || k === 'value') ? { label: v.label, value: v.value } : undefined;
}

/**
 * Pipedream's clients may send an option as chosen, `{ "__lv": { label, value } }` (an array of
 * them for `[]` types). The value is checked; a `withLabel` prop keeps `{ label, value }` (its code
 * reads the label), any other prop gets the plain value.
 */
function unwrapLabelValue(prop: ConfigurableProp, v: unknown): { check: unknown; store: (checked: unknown) => unknown } | undefined {
  const withLabel = prop.withLabel === true;
  // What a `withLabel` prop stored (an update revalidates the stored values), read as the form it came in.
  const stored = prop.type.endsWith('[]') ? Array.isArray(v) && v.length > 0 && v.every((x) => labelValue(x)) : labelValue(v);
  if (withLabel && stored) return unwrapLabelValue(prop, { __lv: v });
  if (!isPlainObject(v) || !('__lv' in v) || Object.keys(v).length !== 1) return undefined;
  const lv = v.__lv;
  const one = (x: unknown) => labelValue(x) ?? fail(prop.name, '"__lv" takes { label, value }');
  if (Array.isArray(lv)) {
    const items = lv.map(one);
    return { check: items.map((i) => i.value), store: (c) => (withLabel ? items.map((i, n) => ({ label: i.label, value: (c as unknown[])[n] })) : c) };
  }
  const item = one(lv);
  return { check: item.value, store: (c) => (withLabel ? { label: item.label, value: c } : c) };
}

/** Validates and normalises one user-provided value. */
function value(prop: ConfigurableProp, v: unknown, limits: ConfiguredPropsLimits, options: ConfiguredPropsOptions = {}): unknown {
  const lv = unwrapLabelValue(prop, v);
  if (lv) return lv.store(plainValue(prop, lv.check, limits, options));
  return plainValue(prop, v, limits, options);
}

function plainValue(prop: ConfigurableProp, v: unknown, limits: ConfiguredPropsLimits, options: ConfiguredPropsOptions): unknown {
  const name = prop.name;
  switch (prop.type) {
    case INTERFACE_TIMER:
      return timerValue(name, v, limits);
    case 'app': {
      if (!isPlainObject(v)) fail(name, 'an app prop takes { "$auth": { … } }');
      const extra = Object.keys(v).filter((k) => k !== '$auth');
      if (extra.length) fail(name, `an app prop takes only "$auth", got ${extra.join(', ')}`);
      if (v.$auth !== undefined && !isPlainObject(v.$auth)) fail(name, '$auth must be an object');
      return { $auth: v.$auth ?? {} };
    }
    case 'object':
    case 'http_request':
      if (!isPlainObject(v)) fail(name, `must be an object, got ${shown(prop, v)}`);
      return v;
    case 'sql':
      if (typeof v !== 'string' && !isPlainObject(v)) fail(name, 'must be a SQL string or an object');
      return v;
    case 'json':
    case 'any':
      return v;
    case 'string[]':
    case 'integer[]':
    case 'boolean[]': {
      if (!Array.isArray(v)) fail(name, `must be an array of ${prop.type.slice(0, -2)}s, got ${shown(prop, v)}`);
      return v.map((item, i) => {
        if (options.deferred?.(item)) return item;
        const out = scalar(prop, prop.type.slice(0, -2), item, `${name}[${i}]`);
        checkMembership(prop, out, `${name}[${i}]`);
        return out;
      });
    }
    default: {
      const out = scalar(prop, prop.type, v, name);
      checkMembership(prop, out, name);
      return out;
    }
  }
}

/** Size of one prop value as entered: a string's UTF-8 bytes (raw text), anything else its JSON bytes. */
function valueBytes(v: unknown): number {
  return typeof v === 'string' ? Buffer.byteLength(v, 'utf8') : Buffer.byteLength(JSON.stringify(v) ?? '', 'utf8');
}

/**
 * Validates a source's `configured_props` against its component's props:
 * types, arrays, options, min/max, timers, app `$auth`, unknown props, size (per value and in all).
 * Returns the values to store (defaults applied, a timer's `static` schedule in place of any value; HTTP, db and alert props hold
 * no user value and are left out). Each error names the prop.
 */
export function validateConfiguredProps(props: ConfigurableProp[], input: unknown, limits: ConfiguredPropsLimits, options: ConfiguredPropsOptions = {}): Record<string, unknown> {
  const given = input === undefined || input === null ? {} : input;
  if (!isPlainObject(given)) throw new BadRequestError('configured_props must be an object of values per prop', { field: 'configured_props' }, 'invalid_props');
  const bytes = Buffer.byteLength(JSON.stringify(given), 'utf8');
  if (bytes > limits.propsDocumentMaxBytes) {
    throw new PayloadTooLargeError(`configured_props is ${bytes} bytes; the limit is ${limits.propsDocumentMaxBytes} (PROPS_DOCUMENT_MAX_BYTES)`, {
      field: 'configured_props',
      bytes,
      limit_bytes: limits.propsDocumentMaxBytes,
    });
  }
  const byName = new Map(props.map((p) => [p.name, p]));
  const unknown = Object.keys(given).filter((k) => !byName.has(k));
  if (unknown.length) {
    // Names the client chose: each quoted clipped, at most UNKNOWN_PROPS_LISTED of them (50,000 made a 1 MB answer).
    const listed = unknown.slice(0, UNKNOWN_PROPS_LISTED).map(clipped);
    const more = unknown.length - listed.length;
    throw new BadRequestError(
      `configured_props has unknown prop${unknown.length > 1 ? 's' : ''} ${listed.join(', ')}${more ? ` and ${more} more` : ''}; the component's props are ${props.map((p) => p.name).join(', ') || '(none)'}`,
      { props: listed, ...(more ? { more } : {}) },
      'invalid_props',
    );
  }
  for (const [name, raw] of Object.entries(given)) {
    const size = valueBytes(raw);
    if (size > limits.propsMaxBytes) {
      throw new PayloadTooLargeError(`configured_props.${name} is ${size} bytes; the limit is ${limits.propsMaxBytes} (PROPS_MAX_BYTES)`, { prop: name, bytes: size, limit_bytes: limits.propsMaxBytes });
    }
  }
  const out: Record<string, unknown> = {};
  for (const prop of props) {
    const raw = given[prop.name];
    if (isSystemType(prop.type)) {
      // null is no value, like an absent key (clients echo `"http": null` from forms).
      if (prop.type === 'alert' && raw !== undefined && raw !== null) fail(prop.name, 'an alert prop takes no value');
      if ((prop.type === INTERFACE_HTTP || prop.type === SERVICE_DB) && raw !== undefined && raw !== null && !isPlainObject(raw)) fail(prop.name, `${prop.type} takes no value`);
      continue;
    }
    if (prop.type === INTERFACE_TIMER && prop.static !== undefined) {
      // A static timer is the component's own schedule (Pipedream's forms do not show it): a value given is not used.
      out[prop.name] = ownSchedule(prop, prop.static, limits);
      continue;
    }
    if (raw === undefined || raw === null) {
      if (prop.default !== undefined) out[prop.name] = prop.type === INTERFACE_TIMER ? ownSchedule(prop, prop.default, limits) : value(prop, prop.default, limits);
      else if (prop.type === 'app') out[prop.name] = { $auth: {} };
      else if (!prop.optional) fail(prop.name, `is required (type ${prop.type})`);
      continue;
    }
    out[prop.name] = options.deferred?.(raw) ? raw : value(prop, raw, limits, options);
  }
  // Given or a default: a value is never stored in the form of an encrypted one.
  for (const [name, v] of Object.entries(out)) {
    const at = encryptedFormAt(v, name);
    if (at !== undefined) fail(name, `${at === name ? 'the value' : at} is an object with a "$enc" string, the form the platform keeps encrypted values in: it is not taken as a value`);
  }
  return out;
}
