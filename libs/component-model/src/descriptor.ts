/**
 * What the sandbox reads from a component's code, as plain JSON. The sandbox
 * (libs/sandbox) produces it in a worker; the component model (this lib)
 * validates it and turns it into the API's `configurable_props`.
 * Functions never cross the worker boundary: they appear as markers.
 */
export type FunctionMarker = { $fn: true; async: boolean };

export interface PropDescriptor {
  /** The prop's name (key in `props`). */
  name: string;
  /** `type` as written, after string shorthands (`"$.service.db"`) are expanded; `app` for app objects used as props. */
  type: string;
  label?: string;
  description?: string;
  optional?: boolean;
  default?: unknown;
  secret?: boolean;
  min?: unknown;
  max?: unknown;
  /** Static options as written, or a marker when `options` is a method. */
  options?: unknown[] | FunctionMarker;
  /** `[appPropName, propDefinitionName, inputValues | marker]` — the app reference replaced by the app prop's name when it is one of the component's app props, else by the app slug. */
  propDefinition?: [string, string, unknown];
  /** `$.interface.http`: */
  customResponse?: boolean;
  /** App props: */
  app?: string;
  propDefinitions?: Record<string, Omit<PropDescriptor, 'name'> & { name?: string }>;
  methods?: string[];
  /** Any other fields as written (JSON-safe), e.g. `reloadProps`, `useQuery`, `content` of an alert. */
  extra?: Record<string, unknown>;
}

export interface ComponentDescriptor {
  name?: unknown;
  key?: unknown;
  version?: unknown;
  /** `source` or `action`, or whatever was written. */
  type?: unknown;
  description?: unknown;
  dedupe?: unknown;
  props: PropDescriptor[];
  methods: string[];
  hooks: string[];
  hasRun: boolean;
  /** The component has an `additionalProps()` method (props that depend on configured values). */
  hasAdditionalProps?: boolean;
  /** Top-level npm imports found in the code (`lodash`, `mysql2/promise`, `axios@0.19.2`…), builtins excluded. */
  dependencies: string[];
  /** Module format the code was loaded as. */
  format: 'cjs' | 'esm';
}
