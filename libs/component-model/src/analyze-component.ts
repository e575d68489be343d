import { BadRequestError, characterCount } from '@app/contracts';
import type { ComponentDescriptor, FunctionMarker, PropDescriptor } from './descriptor';
import { timerProblem } from './configured-props';
import {
  appSpecificTypeApp,
  DEDUPE_STRATEGIES,
  DedupeStrategy,
  HOOK_NAMES,
  INTERFACE_APPHOOK,
  INTERFACE_HTTP,
  INTERFACE_TIMER,
  isInterfaceType,
  isReservedPropName,
  KNOWN_TYPES,
  SERVICE_DB,
  UNSUPPORTED_TYPES,
} from './prop-types';

/** An option of a drop-down: a plain value or `{ label, value }`. */
export type PropOption = string | number | boolean | { label: string; value: unknown };

/** One entry of a Component's `configurable_props`, as the API returns it. */
export interface ConfigurableProp {
  name: string;
  type: string;
  label?: string;
  description?: string;
  optional?: boolean;
  default?: unknown;
  secret?: boolean;
  options?: PropOption[];
  /** True when `options` is an async method (call the options endpoint). */
  remoteOptions?: boolean;
  min?: number;
  max?: number;
  /** `$.interface.http` */
  customResponse?: boolean;
  /** `app` */
  app?: string;
  /** Other fields as written (`alertType`, `content`, `reloadProps`…). */
  [extra: string]: unknown;
}

/** Whether the API hides the prop's value (stored encrypted, shown masked, never quoted): a secret prop's, an app's `$auth`. */
export function hidesValue(p: ConfigurableProp): boolean {
  return p.secret === true || p.type === 'app';
}

/** What the runner and the ingress need besides the props; stored as the component's `meta`. */
export interface ComponentMeta {
  type: 'source' | 'action';
  key?: string;
  dedupe?: DedupeStrategy;
  hooks: string[];
  methods: string[];
  dependencies: string[];
  /** npm versions installed when the component was read (name → exact version). */
  dependencyVersions?: Record<string, string>;
  format: 'cjs' | 'esm';
  apps: { prop: string; app: string; methods: string[] }[];
  httpProps: { prop: string; customResponse: boolean }[];
  timerProps: string[];
  dbProps: string[];
  secretProps: string[];
  /** True when some HTTP prop has `customResponse: true`. */
  customResponse: boolean;
  /** Props resolved through `propDefinition`: `prop → [appProp, definition]`. */
  propDefinitions: Record<string, [string, string]>;
  /** `$.interface.apphook` props: the app they listen to and their event names (null: an `eventNames()` method, asked per event). */
  appHooks?: AppHookMeta[];
  /** The component has `additionalProps()`: each source gets the props it returns for the source's values. */
  additionalProps?: boolean;
}

export interface AppHookMeta {
  prop: string;
  appProp: string;
  app: string;
  eventNames: string[] | null;
}

export interface AnalyzedComponent {
  name: string;
  key?: string;
  version: string;
  type: 'source' | 'action';
  description?: string;
  configurableProps: ConfigurableProp[];
  meta: ComponentMeta;
}

const STANDARD_FIELDS = new Set(['name', 'type', 'label', 'description', 'optional', 'default', 'secret', 'min', 'max', 'options', 'propDefinition', 'customResponse', 'app', 'propDefinitions', 'methods', 'extra', 'eventNames']);

function fail(message: string, details: Record<string, unknown> = {}): never {
  throw new BadRequestError(message, details, 'invalid_component');
}

function isMarker(v: unknown): v is FunctionMarker {
  return typeof v === 'object' && v !== null && (v as FunctionMarker).$fn === true;
}

/** Whether a value read from component code holds a function (a marker) anywhere. */
function holdsFunction(v: unknown, depth = 0): boolean {
  if (isMarker(v)) return true;
  if (typeof v !== 'object' || v === null || depth > 100) return false;
  return (Array.isArray(v) ? v : Object.values(v)).some((x) => holdsFunction(x, depth + 1));
}

/** A value without its functions, as JSON leaves them out: `null` in an array, no key in an object (undefined alone). */
function withoutFunctions(v: unknown, depth = 0): unknown {
  if (isMarker(v)) return undefined;
  if (typeof v !== 'object' || v === null || depth > 100) return v;
  if (Array.isArray(v)) return v.map((x) => withoutFunctions(x, depth + 1) ?? null);
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    const kept = withoutFunctions(x, depth + 1);
    if (kept !== undefined && k !== '__proto__') out[k] = kept;
  }
  return out;
}

function nonEmptyString(v: unknown): v is string {
  return typeof v === 'string' && v.trim() !== '';
}

/** A component's app props by name and by app slug (the first of each), looked up once per prop instead of scanned. */
export interface AppPropIndex {
  byName: Map<string, PropDescriptor>;
  bySlug: Map<unknown, PropDescriptor>;
}

export function indexAppProps(all: PropDescriptor[]): AppPropIndex {
  const index: AppPropIndex = { byName: new Map(), bySlug: new Map() };
  for (const p of all) {
    if (p.type !== 'app') continue;
    if (!index.byName.has(p.name)) index.byName.set(p.name, p);
    if (!index.bySlug.has(p.app)) index.bySlug.set(p.app, p);
  }
  return index;
}

/**
 * Resolves `propDefinition: [app, name, inputValues]`: the app's definition, overridden by fields the instance wrote.
 * `apps`: the index of `all`'s app props. Each prop once scanned every prop for its app: 120,000 props of a few
 * hundred bytes of code held the api's thread for minutes.
 */
export function resolvePropDefinition(prop: PropDescriptor, all: PropDescriptor[], apps: AppPropIndex = indexAppProps(all)): PropDescriptor {
  if (!prop.propDefinition) return prop;
  const [ref, defName] = prop.propDefinition;
  const app = (typeof ref === 'string' ? apps.byName.get(ref) : undefined) ?? apps.bySlug.get(ref);
  if (!app && nonEmptyString(prop.type) && prop.type !== 'unknown') {
    // An app object that is not a prop of this component: the sandbox already merged its definition into the prop.
    const { propDefinition: _ignored, ...rest } = prop;
    void _ignored;
    return rest;
  }
  if (!app) fail(`prop "${prop.name}": propDefinition refers to app "${ref}", which is not an app prop of this component`, { prop: prop.name });
  const def = app.propDefinitions?.[defName];
  if (!def) fail(`prop "${prop.name}": app "${app.app ?? ref}" has no propDefinition "${defName}"`, { prop: prop.name });
  const own: Partial<PropDescriptor> = {};
  for (const [k, v] of Object.entries(prop)) if (v !== undefined && k !== 'propDefinition' && !(k === 'type' && v === '')) (own as Record<string, unknown>)[k] = v;
  return { ...def, extra: { ...(def.extra ?? {}), ...(prop.extra ?? {}) }, ...own, name: prop.name, type: (own.type ?? def.type) as string };
}

function checkOptions(prop: PropDescriptor): PropOption[] | undefined {
  if (prop.options === undefined || isMarker(prop.options)) return undefined;
  if (!Array.isArray(prop.options)) fail(`prop "${prop.name}": options must be an array or a method`, { prop: prop.name });
  return prop.options.map((o) => {
    if (typeof o === 'string' || typeof o === 'number' || typeof o === 'boolean') return o;
    if (typeof o === 'object' && o !== null && 'value' in o) {
      const label = (o as { label?: unknown }).label;
      return { label: typeof label === 'string' ? label : String((o as { value: unknown }).value), value: (o as { value: unknown }).value };
    }
    return fail(`prop "${prop.name}": each option must be a string, a number or { label, value }`, { prop: prop.name });
  });
}

/**
 * A timer's `default`, and its `static` (the value the component fixes: Google Drive's renewal schedule), are timer
 * values, checked as a source's is (an interval under the operator's minimum is raised at deploy, not refused).
 */
function checkTimerDefault(prop: PropDescriptor): void {
  for (const [field, d] of [['default', prop.default], ['static', prop.extra?.static]] as const) {
    if (d === undefined) continue;
    const problem = timerProblem(d, 1);
    if (problem) fail(`prop "${prop.name}": a timer ${field} must be a timer value: ${problem}`, { prop: prop.name });
  }
}

export function toConfigurable(prop: PropDescriptor): ConfigurableProp {
  const out: ConfigurableProp = { name: prop.name, type: prop.type };
  for (const [k, v] of Object.entries(prop.extra ?? {})) {
    // Other fields are shown as the component wrote them, as JSON: a function (a method of the component's own) is not.
    const shown = STANDARD_FIELDS.has(k) || k === '__proto__' ? undefined : withoutFunctions(v);
    if (shown !== undefined) out[k] = shown;
  }
  if (prop.label !== undefined) out.label = String(prop.label);
  if (prop.description !== undefined) out.description = String(prop.description);
  if (prop.optional !== undefined) out.optional = prop.optional === true;
  if (prop.type === 'alert') out.optional = true;
  if (prop.default !== undefined) out.default = prop.default;
  if (prop.secret !== undefined) out.secret = prop.secret === true;
  const options = checkOptions(prop);
  if (options) out.options = options;
  if (isMarker(prop.options)) out.remoteOptions = true;
  if (prop.min !== undefined) out.min = prop.min as number;
  if (prop.max !== undefined) out.max = prop.max as number;
  if (prop.type === INTERFACE_HTTP && prop.customResponse !== undefined) out.customResponse = prop.customResponse === true;
  if (prop.type === 'app') out.app = prop.app;
  if (prop.type === INTERFACE_APPHOOK) {
    const names = (prop.extra ?? {}).eventNames;
    if (Array.isArray(names)) out.eventNames = names;
    else if (isMarker(names)) out.remoteEventNames = true;
  }
  return out;
}

/** An app hook listens to an app prop of the component (`appProp`) and names its events (`eventNames`: strings or a method). */
function checkAppHook(prop: PropDescriptor, apps: AppPropIndex): AppHookMeta {
  const where = `prop "${prop.name}"`;
  const extra = prop.extra ?? {};
  const appProp = extra.appProp;
  if (!nonEmptyString(appProp)) fail(`${where}: an app hook needs appProp, the name of an app prop of the component`, { prop: prop.name });
  const app = apps.byName.get(appProp);
  if (!app) fail(`${where}: appProp "${appProp}" is not an app prop of this component`, { prop: prop.name });
  const names = extra.eventNames;
  if (names !== undefined && !isMarker(names) && !(Array.isArray(names) && names.every((n) => typeof n === 'string'))) {
    fail(`${where}: eventNames must be an array of strings or a method returning one`, { prop: prop.name });
  }
  return { prop: prop.name, appProp, app: app.app as string, eventNames: Array.isArray(names) ? (names as string[]) : null };
}

export function checkProp(prop: PropDescriptor, isAction: boolean, appSlugs: Set<string>): void {
  const where = `prop "${prop.name}"`;
  const type = prop.type;
  if (isReservedPropName(prop.name)) fail(`${where}: every JavaScript object has a member named "${prop.name}"; choose another name`, { prop: prop.name });
  if (!nonEmptyString(type)) fail(`${where} has no type`, { prop: prop.name });
  if (UNSUPPORTED_TYPES[type]) fail(`${where}: ${UNSUPPORTED_TYPES[type]}`, { prop: prop.name, type });
  const appOfType = appSpecificTypeApp(type);
  if (appOfType !== undefined && !appSlugs.has(appOfType)) {
    fail(`${where} has type "${type}", which needs an app prop of app "${appOfType}" in the component`, { prop: prop.name, type });
  }
  if (!KNOWN_TYPES.includes(type) && appOfType === undefined) fail(`${where} has unknown type "${type}"; known types: ${KNOWN_TYPES.join(', ')}, or $.<app>.<name> with an app prop of that app`, { prop: prop.name, type });
  if (isAction && isInterfaceType(type)) fail(`${where}: ${type} is for sources only, not actions`, { prop: prop.name, type });
  const isInt = type === 'integer' || type === 'integer[]';
  for (const bound of ['min', 'max'] as const) {
    if (prop[bound] === undefined) continue;
    if (!isInt) fail(`${where}: ${bound} is allowed on integer props only (type is ${type})`, { prop: prop.name });
    if (!Number.isInteger(prop[bound])) fail(`${where}: ${bound} must be an integer`, { prop: prop.name });
  }
  if (prop.min !== undefined && prop.max !== undefined && (prop.min as number) > (prop.max as number)) fail(`${where}: min is greater than max`, { prop: prop.name });
  if (prop.secret === true && type !== 'string') fail(`${where}: secret is allowed on string props only (type is ${type})`, { prop: prop.name });
  // A default on a required prop is its value when none is configured (as on Pipedream): a value, stored and shown as JSON.
  if (holdsFunction(prop.default)) fail(`${where}: default must be a value (JSON), not a function`, { prop: prop.name });
  if (type === INTERFACE_TIMER) checkTimerDefault(prop);
  if (type === 'app' && !nonEmptyString(prop.app)) fail(`${where}: an app prop needs an "app" slug`, { prop: prop.name });
}

/** Longest component `name`, `version` and `key` (they are stored as such and shown in every list). */
export const COMPONENT_TEXT_MAX_CHARS = 255;

/**
 * Validates what the sandbox read from a component's code and builds its
 * `configurable_props` and meta. Throws a 400 naming the first problem.
 */
export function analyzeComponent(desc: ComponentDescriptor): AnalyzedComponent {
  if (!nonEmptyString(desc.name)) fail('the component has no name: export an object with a name string', { field: 'name' });
  if (desc.version === undefined || desc.version === null) fail('the component has no version: add a version string', { field: 'version' });
  if (!nonEmptyString(desc.version)) fail(`version must be a non-empty string such as "0.0.1", got ${JSON.stringify(desc.version)}`, { field: 'version' });
  const type = desc.type === undefined || desc.type === null ? 'source' : desc.type;
  if (type !== 'source' && type !== 'action') fail(`type must be "source" or "action", got ${JSON.stringify(type)}`, { field: 'type' });
  const isAction = type === 'action';
  if (desc.key !== undefined && desc.key !== null && !nonEmptyString(desc.key)) fail('key must be a non-empty string', { field: 'key' });
  for (const field of ['name', 'version', 'key'] as const) {
    const value = desc[field];
    const chars = typeof value === 'string' && value.length > COMPONENT_TEXT_MAX_CHARS ? characterCount(value) : 0;
    if (chars > COMPONENT_TEXT_MAX_CHARS) fail(`${field} must be at most ${COMPONENT_TEXT_MAX_CHARS} characters, got ${chars}`, { field });
  }
  let dedupe: DedupeStrategy | undefined;
  if (desc.dedupe !== undefined && desc.dedupe !== null) {
    if (!DEDUPE_STRATEGIES.includes(desc.dedupe as DedupeStrategy)) fail(`unknown dedupe strategy ${JSON.stringify(desc.dedupe)}; use unique, greatest or last`, { field: 'dedupe' });
    if (isAction) fail('dedupe is for sources only, not actions', { field: 'dedupe' });
    dedupe = desc.dedupe as DedupeStrategy;
  }
  if (isAction && desc.hooks.length) fail(`hooks are for sources only, not actions (found ${desc.hooks.join(', ')})`, { field: 'hooks' });
  const unknownHooks = desc.hooks.filter((h) => !(HOOK_NAMES as readonly string[]).includes(h));
  if (unknownHooks.length) fail(`unknown hook${unknownHooks.length > 1 ? 's' : ''} ${unknownHooks.join(', ')}; hooks are deploy, activate and deactivate`, { field: 'hooks' });

  const seen = new Set<string>();
  const apps = indexAppProps(desc.props);
  const resolved = desc.props.map((p) => {
    if (!nonEmptyString(p.name)) fail('a prop has no name', { field: 'props' });
    if (seen.has(p.name)) fail(`prop "${p.name}" is declared twice`, { prop: p.name });
    seen.add(p.name);
    return resolvePropDefinition(p, desc.props, apps);
  });
  // `$.airtable.baseId` names the app by slug; an app prop named after it counts too (`appProp: "airtable"`).
  const appSlugs = new Set(resolved.filter((p) => p.type === 'app').flatMap((p) => [p.name, ...(nonEmptyString(p.app) ? [p.app] : [])]));
  resolved.forEach((p) => checkProp(p, isAction, appSlugs));
  // A source without run that has a timer or HTTP interface (Pipedream's own schedule sources)
  // emits each triggering event unchanged; anything else without run is refused.
  const resolvedApps = indexAppProps(resolved);
  const appHooks = resolved.filter((p) => p.type === INTERFACE_APPHOOK).map((p) => checkAppHook(p, resolvedApps));
  if (!desc.hasRun && (isAction || !resolved.some((p) => p.type === INTERFACE_TIMER || p.type === INTERFACE_HTTP))) {
    fail(`the component has no run method${isAction ? '' : ' (a source without run needs a $.interface.timer or $.interface.http prop: it then emits each triggering event)'}`, { field: 'run' });
  }

  const meta: ComponentMeta = {
    type,
    key: nonEmptyString(desc.key) ? desc.key : undefined,
    dedupe,
    hooks: [...desc.hooks],
    methods: [...desc.methods],
    dependencies: [...desc.dependencies],
    format: desc.format,
    apps: resolved.filter((p) => p.type === 'app').map((p) => ({ prop: p.name, app: p.app as string, methods: p.methods ?? [] })),
    httpProps: resolved.filter((p) => p.type === INTERFACE_HTTP).map((p) => ({ prop: p.name, customResponse: p.customResponse === true })),
    timerProps: resolved.filter((p) => p.type === INTERFACE_TIMER).map((p) => p.name),
    dbProps: resolved.filter((p) => p.type === SERVICE_DB).map((p) => p.name),
    secretProps: resolved.filter((p) => p.secret === true).map((p) => p.name),
    customResponse: resolved.some((p) => p.type === INTERFACE_HTTP && p.customResponse === true),
    propDefinitions: Object.fromEntries(desc.props.filter((p) => p.propDefinition).map((p) => [p.name, [p.propDefinition![0], p.propDefinition![1]]])),
    ...(appHooks.length ? { appHooks } : {}),
    ...(desc.hasAdditionalProps ? { additionalProps: true } : {}),
  };
  return {
    name: (desc.name as string).trim(),
    key: meta.key,
    version: (desc.version as string).trim(),
    type,
    description: typeof desc.description === 'string' ? desc.description : undefined,
    configurableProps: resolved.map(toConfigurable),
    meta,
  };
}
