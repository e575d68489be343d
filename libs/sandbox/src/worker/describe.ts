import type { ComponentDescriptor, FunctionMarker, PropDescriptor } from '@app/component-model';
import type { ComponentDefinition } from './loader';
import { functionsOf, isObject, propType } from './plan';

/** Functions never cross the worker boundary: they become markers. */
function marker(fn: (...a: unknown[]) => unknown): FunctionMarker {
  return { $fn: true, async: fn.constructor?.name === 'AsyncFunction' };
}

/** Deepest nesting of a value copied out of component code (as deep as a JSON request body may be). */
export const JSON_SAFE_MAX_DEPTH = 100;

/**
 * A JSON-safe copy: functions become markers (or, with `dropFunctions`, are dropped as JSON drops them: `null` in
 * an array, left out of an object), cycles and non-JSON values are dropped. Nesting deeper than
 * JSON_SAFE_MAX_DEPTH throws (such a value would overflow the stack of whoever reads it next).
 */
export function jsonSafe(v: unknown, seen = new Set<unknown>(), depth = 0, dropFunctions = false): unknown {
  if (typeof v === 'function') return dropFunctions ? undefined : marker(v as (...a: unknown[]) => unknown);
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v !== 'object') return undefined;
  if (seen.has(v)) return undefined;
  if (v instanceof Date) return v.toISOString();
  if (depth >= JSON_SAFE_MAX_DEPTH) throw new RangeError(`a value is nested deeper than ${JSON_SAFE_MAX_DEPTH} levels`);
  seen.add(v);
  try {
    if (Array.isArray(v)) return v.map((x) => jsonSafe(x, seen, depth + 1, dropFunctions) ?? null);
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const s = jsonSafe(x, seen, depth + 1, dropFunctions);
      // An own "__proto__" key (JSON.parse makes them) never leaves the sandbox: read back, it would be a prototype.
      if (s !== undefined && k !== '__proto__') out[k] = s;
    }
    return out;
  } finally {
    seen.delete(v);
  }
}

const KNOWN = new Set(['type', 'label', 'description', 'optional', 'default', 'secret', 'min', 'max', 'options', 'propDefinition', 'customResponse', 'app', 'propDefinitions', 'methods']);

type Props = Record<string, unknown>;

/** The app object of an app prop named `ref`, else of the first app prop whose `app` slug is `ref`. */
export function appObjectNamed(ref: string, appProps: Map<unknown, string>): Record<string, unknown> | undefined {
  const entries = [...appProps.entries()];
  const hit = entries.find(([, name]) => name === ref) ?? entries.find(([obj]) => isObject(obj) && obj.app === ref);
  return hit && isObject(hit[0]) ? hit[0] : undefined;
}

/** Describes one prop; `appProps` maps app objects of the component to their prop names (for propDefinition). */
function describeProp(name: string, raw: unknown, appProps: Map<unknown, string>): PropDescriptor {
  if (typeof raw === 'string') return { name, type: raw };
  if (!isObject(raw)) return { name, type: String(jsonSafe(raw) ?? 'unknown') };
  let p: Record<string, unknown> = raw;
  const out: PropDescriptor = { name, type: '' };
  const pd = raw.propDefinition;
  if (Array.isArray(pd) && pd.length >= 2) {
    const [written, defName, inputValues] = pd as [unknown, unknown, unknown];
    // `[app object, name]` as Pipedream writes it, or the app prop's name (or app slug) as a string.
    const app = typeof written === 'string' ? (appObjectNamed(written, appProps) ?? written) : written;
    const ref = appProps.get(app) ?? (isObject(app) && typeof app.app === 'string' ? app.app : typeof app === 'string' ? app : 'unknown');
    out.propDefinition = [ref, String(defName), typeof inputValues === 'function' ? marker(inputValues as () => unknown) : jsonSafe(inputValues)];
    // The instance inherits the app's definition and may override any field.
    const defs = isObject(app) && isObject(app.propDefinitions) ? app.propDefinitions : undefined;
    const inherited = defs && isObject(defs[String(defName)]) ? (defs[String(defName)] as Record<string, unknown>) : undefined;
    if (inherited) p = { ...inherited, ...raw };
  }
  out.type = propType(p) ?? 'unknown';
  if (p.type === 'app') {
    if (typeof p.app === 'string') out.app = p.app;
    const defs = isObject(p.propDefinitions) ? p.propDefinitions : {};
    out.propDefinitions = {};
    for (const [dn, d] of Object.entries(defs)) {
      const { name: _n, ...rest } = describeProp(dn, d, appProps);
      void _n;
      out.propDefinitions[dn] = rest;
    }
    out.methods = functionsOf(p.methods).map(([m]) => m);
  }
  if (typeof p.label === 'string') out.label = p.label;
  if (typeof p.description === 'string') out.description = p.description;
  // Read as JavaScript reads them (`secret: 1` hides the value): a non-boolean was dropped, so such a secret was
  // stored and shown in the clear.
  if (p.optional !== undefined) out.optional = Boolean(p.optional);
  if ('default' in p) out.default = jsonSafe(p.default);
  if (p.secret !== undefined) out.secret = Boolean(p.secret);
  if ('min' in p) out.min = jsonSafe(p.min);
  if ('max' in p) out.max = jsonSafe(p.max);
  if (typeof p.options === 'function') out.options = marker(p.options as () => unknown);
  else if (Array.isArray(p.options)) out.options = jsonSafe(p.options) as unknown[];
  // Only when written: `configurable_props` shows the fields the component declares.
  if (out.type === '$.interface.http' && p.customResponse !== undefined) out.customResponse = p.customResponse === true;
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(p)) {
    if (KNOWN.has(k) || k === '__proto__') continue;
    const s = jsonSafe(v);
    if (s !== undefined) extra[k] = s;
  }
  // An app hook's `eventNames()` method (called per event by the API, like options()).
  if (out.type === '$.interface.apphook' && typeof p.eventNames === 'function') extra.eventNames = marker(p.eventNames as () => unknown);
  if (Object.keys(extra).length) out.extra = extra;
  return out;
}

/** Describes a props object; app objects among `appSources` (the component's own props) name propDefinition references. */
export function describeProps(props: Props, appSources: Props = props): PropDescriptor[] {
  const appProps = appPropsOf(appSources, props);
  return Object.entries(props).map(([n, p]) => describeProp(n, p, appProps));
}

/** The app objects among props objects, each with the name of its (first) prop. */
export function appPropsOf(...sources: Props[]): Map<unknown, string> {
  const appProps = new Map<unknown, string>();
  for (const [name, p] of sources.flatMap((s) => Object.entries(s))) {
    if (isObject(p) && p.type === 'app' && !appProps.has(p)) appProps.set(p, name);
  }
  return appProps;
}

export function describeDefinition(def: ComponentDefinition, format: 'cjs' | 'esm', dependencies: string[]): ComponentDescriptor {
  const props: Props = isObject(def.props) ? def.props : {};
  const scalar = (v: unknown) => (v === undefined ? undefined : jsonSafe(v));
  return {
    name: scalar(def.name),
    key: scalar(def.key),
    version: scalar(def.version),
    type: scalar(def.type),
    description: scalar(def.description),
    dedupe: scalar(def.dedupe),
    props: describeProps(props),
    methods: functionsOf(def.methods).map(([m]) => m),
    hooks: functionsOf(def.hooks).map(([h]) => h),
    hasRun: typeof def.run === 'function',
    ...(typeof def.additionalProps === 'function' ? { hasAdditionalProps: true } : {}),
    dependencies,
    format,
  };
}
