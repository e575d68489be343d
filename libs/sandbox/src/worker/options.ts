import { performance } from 'node:perf_hooks';
import type { AdditionalPropsResult, OptionsResult, SandboxError } from '../types';
import type { WorkerAdditionalPropsTask, WorkerOptionsTask } from '../worker-protocol';
import { describeError } from './capture';
import { buildContext, makeApp } from './context';
import { callBounded } from './execute';
import { appObjectNamed, appPropsOf, describeProps, jsonSafe } from './describe';
import { loadComponent } from './loader';
import { functionsOf, isObject, planFor } from './plan';
import { previousPropDefs } from './previous-prop-defs';
import type { InvocationState } from './services';

/** Options as plain JSON (functions and cycles dropped, as JSON drops them) so that they cross the worker boundary. */
const plain = (v: unknown): unknown => jsonSafe(v, new Set(), 0, true);

function normalize(value: unknown): OptionsResult {
  if (Array.isArray(value)) return { options: plain(value) as unknown[] };
  if (isObject(value) && Array.isArray(value.options)) {
    const out: OptionsResult = { options: plain(value.options) as unknown[] };
    if (value.context !== undefined) out.context = plain(value.context);
    return out;
  }
  throw new TypeError('options() must return an array, or { options: [...], context }');
}

/** A state in which `$emit`, the db and `$.send` are closed: configuring a source has no side effects. */
function closedState(): InvocationState {
  return {
    limits: { dbMaxBytes: 0, eventMaxBytes: 0, emitsPerInvocation: 0 },
    snapshot: {},
    written: new Map(),
    emits: [],
    logs: [],
    sends: [],
    exports: {},
    closed: true,
  };
}

/**
 * Calls the async `options({ page, prevContext, ...inputValues })` of a prop:
 * the prop's own (with the component's `this`), or the one of the app
 * propDefinition it reuses (with the app instance as `this`).
 */
export async function options(task: WorkerOptionsTask): Promise<OptionsResult> {
  try {
    const out = await callOptions(task);
    // Checked here so that an oversized answer never reaches the api.
    const bytes = Buffer.byteLength(JSON.stringify(out), 'utf8');
    if (bytes > task.maxBytes) throw new RangeError(`it returned ${bytes} bytes of JSON; at most ${task.maxBytes} may be returned`);
    return out;
  } catch (e) {
    return { error: boundedError(e) };
  }
}

async function callOptions(task: WorkerOptionsTask): Promise<OptionsResult> {
  const deadline = performance.now() + task.timeoutMs;
  const state = closedState();
  const { definition } = await loadComponent(task.bundle, task.timeoutMs);
  const props = isObject(definition.props) ? definition.props : {};
  const configured = task.input.configuredProps ?? {};
  const args: Record<string, unknown> = { page: task.input.page ?? 0, prevContext: task.input.prevContext ?? {} };
  const ctx = buildContext(planFor(definition), { props: configured }, state);
  let prop = props[task.propName];
  // A prop that additionalProps() adds for the values configured so far (its options often close over them).
  if (prop === undefined && typeof definition.additionalProps === 'function') {
    const f = definition.additionalProps as (previous: unknown) => unknown;
    const added = await callBounded(() => f.call(ctx, previousPropDefs(props, task.input.previousProps)), deadline, 'additionalProps()', task.timeoutMs);
    if (isObject(added)) prop = added[task.propName];
  }
  if (prop === undefined) throw new Error(`the component has no prop "${task.propName}"`);
  if (!isObject(prop)) throw new Error(`prop "${task.propName}" has no options`);
  // An app hook's event names are asked the same way (array or method).
  let fn: unknown = prop.type === '$.interface.apphook' ? prop.eventNames : prop.options;
  let self: unknown = ctx;
  const pd = prop.propDefinition;
  if (fn === undefined && Array.isArray(pd)) {
    const [written, defName, inputValues] = pd as [unknown, unknown, unknown];
    const app = typeof written === 'string' ? appObjectNamed(written, appPropsOf(props)) : written;
    const def = isObject(app) && isObject(app.propDefinitions) ? app.propDefinitions[String(defName)] : undefined;
    if (!isObject(def)) throw new Error(`prop "${task.propName}": propDefinition "${String(defName)}" not found in its app`);
    fn = def.options;
    const appPropName = Object.entries(props).find(([, p]) => p === app)?.[0];
    self = makeApp(functionsOf((app as Record<string, unknown>).methods), appPropName ? configured[appPropName] : undefined, (app as Record<string, unknown>).app);
    const extra = typeof inputValues === 'function' ? (inputValues as (c: unknown) => unknown)(configured) : inputValues;
    if (isObject(extra)) Object.assign(args, extra);
  }
  if (Array.isArray(fn)) return { options: plain(fn) as unknown[] };
  if (typeof fn !== 'function') throw new Error(`prop "${task.propName}" has no options`);
  const f = fn as (a: unknown) => unknown;
  return normalize(await callBounded(() => f.call(self, args), deadline, 'options()', task.timeoutMs));
}

/**
 * Calls the component's `additionalProps(previousPropDefs)` with `this` holding the static props'
 * values (methods bound, app props as `{ $auth }`), as Pipedream does once the props marked
 * `reloadProps` are set. `previousPropDefs` holds the static definitions followed by the props it
 * added last time (`task.previousProps`; none on a first deploy); components often return
 * `{ ...previousPropDefs, extra }`. Returned props named like a static prop are left out.
 */
export async function additionalProps(task: WorkerAdditionalPropsTask): Promise<AdditionalPropsResult> {
  const deadline = performance.now() + task.timeoutMs;
  try {
    const { definition } = await loadComponent(task.bundle, task.timeoutMs);
    const fn = definition.additionalProps;
    if (typeof fn !== 'function') return { props: [] };
    const staticProps = isObject(definition.props) ? definition.props : {};
    const ctx = buildContext(planFor(definition), { props: task.configuredProps }, closedState());
    const f = fn as (previous: unknown) => unknown;
    const out = await callBounded(() => f.call(ctx, previousPropDefs(staticProps, task.previousProps)), deadline, 'additionalProps()', task.timeoutMs);
    if (out === undefined || out === null) return { props: [] };
    if (!isObject(out) || Array.isArray(out)) throw new TypeError('additionalProps() must return an object of prop definitions ({ name: { type, … } })');
    const added = Object.fromEntries(Object.entries(out).filter(([name]) => !Object.prototype.hasOwnProperty.call(staticProps, name)));
    // Checked here so that an oversized answer never reaches the api.
    const count = Object.keys(added).length;
    if (count > task.maxProps) throw new RangeError(`it returned ${count} props; at most ${task.maxProps} may be added`);
    const props = describeProps(added, staticProps);
    const bytes = Buffer.byteLength(JSON.stringify(props), 'utf8');
    if (bytes > task.maxBytes) throw new RangeError(`the props it returned are ${bytes} bytes of JSON; at most ${task.maxBytes} may be added`);
    return { props };
  } catch (e) {
    return { error: boundedError(e) };
  }
}

/** Longest error message of options() and additionalProps() passed on (the api shows it in a 400). */
export const ERROR_MESSAGE_MAX_CHARS = 2000;

/** The error of a call that failed, its message cut to ERROR_MESSAGE_MAX_CHARS; a thrown value that cannot be read says so. */
function boundedError(e: unknown): SandboxError {
  try {
    const { name, message } = describeError(e);
    const cut = (s: string, max: number) => (s.length > max ? `${s.slice(0, max)}…` : s);
    return { name: cut(name, 100), message: cut(message, ERROR_MESSAGE_MAX_CHARS) };
  } catch {
    return { name: 'Error', message: 'it threw a value that cannot be read' };
  }
}
