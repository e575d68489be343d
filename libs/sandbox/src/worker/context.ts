import type { SendRecord } from '../types';
import type { ComponentPlan } from './plan';
import { type InvocationState, makeDb, makeEmit, makeRespond, SandboxLimitError, sizedClone } from './services';

/** Thrown by `$.flow.exit()`: ends an action's run without an error. */
export class FlowExit {
  constructor(readonly reason?: string) {}
}

export interface ContextInput {
  props: Record<string, unknown>;
  endpointUrl?: string;
}

/** An app prop's instance: `$auth` and the app's methods bound to it. */
export function makeApp(methods: [string, (...a: unknown[]) => unknown][] | undefined, value: unknown, slug: unknown): Record<string, unknown> {
  const v = value && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  const app: Record<string, unknown> = { ...v, $auth: v.$auth ?? {}, app: typeof slug === 'string' ? slug : undefined };
  for (const [name, fn] of methods ?? []) app[name] = fn.bind(app);
  return app;
}

function endpointOf(value: unknown, endpointUrl: string | undefined): string | undefined {
  if (endpointUrl) return endpointUrl;
  if (value && typeof value === 'object') {
    const v = value as Record<string, unknown>;
    const e = v.endpoint ?? v.endpoint_url;
    if (typeof e === 'string') return e;
  }
  return undefined;
}

/**
 * `this` of one invocation: every prop, the component's methods bound to it
 * (detached calls work), app instances, `db`, the http interface, `$emit`.
 */
export function buildContext(plan: ComponentPlan, input: ContextInput, state: InvocationState): Record<string, unknown> {
  const ctx: Record<string, unknown> = {};
  for (const [name, fn] of plan.methods) ctx[name] = fn.bind(ctx);
  for (const p of plan.props) {
    const value = input.props[p.name];
    switch (p.kind) {
      case 'db':
        ctx[p.name] = makeDb(state);
        break;
      case 'http':
        ctx[p.name] = {
          ...(value && typeof value === 'object' ? value : {}),
          endpoint: endpointOf(value, input.endpointUrl),
          respond: makeRespond(state, p.name, p.customResponse),
        };
        break;
      case 'app':
        ctx[p.name] = makeApp(p.appMethods, value, p.def?.app);
        break;
      case 'dir':
        ctx[p.name] = makeDir(p.name);
        break;
      default:
        ctx[p.name] = value === undefined && p.hasDefault ? structuredCloneSafe(p.default) : value;
    }
  }
  // Values of props that `additionalProps()` added (stored with the source): `this.<name>` as well.
  for (const [name, value] of Object.entries(input.props)) if (!(name in ctx)) ctx[name] = value;
  ctx.$emit = makeEmit(state);
  return ctx;
}

/**
 * A `dir` prop is a directory of Pipedream's File Stash (`this.dir.open(path).fromReadableStream(…)`),
 * which this service does not have: each of its methods throws a clear error, so sources that stash
 * files only on request (an `includeLink` option…) run as long as they are not asked to.
 */
function makeDir(prop: string): unknown {
  const unavailable = (): never => {
    throw Object.assign(new Error(`File Stash is not available in this service: the "${prop}" dir prop cannot store or read files`), { name: 'FileStashUnavailableError' });
  };
  return new Proxy({}, { get: (_t, key) => (typeof key === 'symbol' || key === 'then' || key === 'toJSON' ? undefined : unavailable) });
}

function structuredCloneSafe(v: unknown): unknown {
  if (typeof v !== 'object' || v === null) return v;
  try {
    return structuredClone(v);
  } catch {
    return v;
  }
}

const SEND_KINDS: SendRecord['kind'][] = ['http', 'email', 's3', 'emit', 'sse'];

/** The `$` of an action's `run({ $ })`. */
export function makeDollar(state: InvocationState): Record<string, unknown> {
  const send: Record<string, (payload: unknown) => void> = {};
  for (const kind of SEND_KINDS) {
    send[kind] = (payload: unknown) => {
      if (state.closed) throw new Error(`$.send.${kind}() was called after the run finished`);
      // Each send is one NATS message (an event, a SENDS message): counted and sized like `$emit`, over the whole run.
      if (state.sends.length >= state.limits.emitsPerInvocation) {
        throw new SandboxLimitError('SendLimitError', `send limit exceeded: at most ${state.limits.emitsPerInvocation} $.send calls per workflow run (EMITS_PER_INVOCATION)`);
      }
      state.sends.push({ kind, payload: sizedClone(payload, `$.send.${kind}()`, state.limits.eventMaxBytes, 'SendSizeLimitError') });
    };
  }
  const unsupported = (what: string) => () => {
    throw new Error(`${what} is not supported by this service`);
  };
  return {
    export(name: unknown, value: unknown) {
      if (state.closed) throw new Error('$.export() was called after the run finished');
      const key = String(name);
      // `__proto__` would replace the exports' prototype (the export silently lost); `$return_value` is the step's own.
      if (key === '__proto__' || key === '$return_value') throw new TypeError(`$.export("${key}"): "${key}" is a reserved name`);
      state.exports[key] = sizedClone(value, `$.export("${key}")`, state.limits.eventMaxBytes, 'ExportSizeLimitError');
    },
    respond: makeRespond(state, '$', true),
    flow: {
      exit(reason?: unknown) {
        // Kept on the state: a step that catches the throw (a try/catch around it) still ends the run.
        state.exit ??= { reason: reason === undefined ? undefined : String(reason) };
        throw new FlowExit(state.exit.reason);
      },
      delay: unsupported('$.flow.delay()'),
      rerun: unsupported('$.flow.rerun()'),
      suspend: unsupported('$.flow.suspend()'),
    },
    send,
  };
}
