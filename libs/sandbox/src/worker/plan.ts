import type { ComponentDefinition } from './loader';

/**
 * What building `this` needs to know about a component, computed once per
 * loaded definition (not per invocation).
 */
export type PropKind = 'db' | 'http' | 'timer' | 'app' | 'dir' | 'value';

export interface PropPlan {
  name: string;
  kind: PropKind;
  /** The prop definition object (undefined for string shorthands). */
  def?: Record<string, unknown>;
  customResponse: boolean;
  hasDefault: boolean;
  default?: unknown;
  /** App props: their methods. */
  appMethods?: [string, (...a: unknown[]) => unknown][];
}

export interface ComponentPlan {
  isAction: boolean;
  props: PropPlan[];
  methods: [string, (...a: unknown[]) => unknown][];
}

const plans = new WeakMap<object, ComponentPlan>();

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function functionsOf(obj: unknown): [string, (...a: unknown[]) => unknown][] {
  if (!isObject(obj)) return [];
  return Object.entries(obj).filter((e): e is [string, (...a: unknown[]) => unknown] => typeof e[1] === 'function');
}

/** The type of a prop as written, string shorthands included. */
export function propType(p: unknown): string | undefined {
  if (typeof p === 'string') return p;
  if (isObject(p) && typeof p.type === 'string') return p.type;
  return undefined;
}

function kindOf(type: string | undefined): PropKind {
  switch (type) {
    case '$.service.db':
      return 'db';
    case '$.interface.http':
      return 'http';
    case '$.interface.timer':
      return 'timer';
    case 'app':
      return 'app';
    case 'dir':
      return 'dir';
    default:
      return 'value';
  }
}

/**
 * A prop with `propDefinition: [app, name]` inherits the app's definition (its
 * type, default, customResponse…) under its own fields, as the descriptor does.
 */
export function withInherited(p: unknown): unknown {
  if (!isObject(p) || !Array.isArray(p.propDefinition)) return p;
  const [app, defName] = p.propDefinition as [unknown, unknown];
  const defs = isObject(app) && isObject(app.propDefinitions) ? app.propDefinitions : undefined;
  const inherited = defs ? defs[String(defName)] : undefined;
  return isObject(inherited) ? { ...inherited, ...p } : p;
}

export function planFor(definition: ComponentDefinition): ComponentPlan {
  const cached = plans.get(definition);
  if (cached) return cached;
  const props: PropPlan[] = [];
  const rawProps = isObject(definition.props) ? definition.props : {};
  for (const [name, raw] of Object.entries(rawProps)) {
    const p = withInherited(raw);
    const def = isObject(p) ? p : undefined;
    const kind = kindOf(propType(p));
    props.push({
      name,
      kind,
      def,
      customResponse: kind === 'http' && def?.customResponse === true,
      hasDefault: def !== undefined && 'default' in def,
      default: def?.default,
      appMethods: kind === 'app' ? functionsOf(def?.methods) : undefined,
    });
  }
  const plan: ComponentPlan = { isAction: definition.type === 'action', props, methods: functionsOf(definition.methods) };
  plans.set(definition, plan);
  return plan;
}
