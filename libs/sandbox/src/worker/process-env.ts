import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Variables Pipedream's runtime sets for the code of one deployed component: `PD_COMPONENT`, the
 * source's id (`dc_…`), which registry sources read to name what they register (ActiveCampaign's
 * webhook, AWS's SNS topic) and to subscribe to themselves (the Task Scheduler's `self` channel).
 * `process.env` is per worker and a worker runs the tasks of many sources, so each invocation's
 * variables follow it through its promises and timers (AsyncLocalStorage), over the worker's own
 * `process.env`, which component code may still write (a module that sets a flag at load time).
 */
const als = new AsyncLocalStorage<Record<string, string>>();

const own = (vars: Record<string, string> | undefined, key: string | symbol): key is string => vars !== undefined && typeof key === 'string' && Object.prototype.hasOwnProperty.call(vars, key);

export function installInvocationEnv(): void {
  const base = process.env;
  process.env = new Proxy(base, {
    get: (t, k) => (own(als.getStore(), k) ? als.getStore()![k] : Reflect.get(t, k)),
    // Writes go to the worker's env object itself (which turns values into strings, as Node's does).
    set: (t, k, v) => Reflect.set(t, k, v),
    has: (t, k) => own(als.getStore(), k) || Reflect.has(t, k),
    ownKeys: (t) => [...new Set([...Reflect.ownKeys(t), ...Object.keys(als.getStore() ?? {})])],
    getOwnPropertyDescriptor: (t, k) => {
      const vars = als.getStore();
      return own(vars, k) ? { value: vars![k], writable: true, enumerable: true, configurable: true } : Reflect.getOwnPropertyDescriptor(t, k);
    },
  });
}

/** Runs `fn` with the variables of an invocation of `sourceId` (a workflow's steps get none). */
export function withInvocationEnv<T>(sourceId: string | undefined, fn: () => Promise<T>): Promise<T> {
  return als.run(sourceId?.startsWith('dc_') ? { PD_COMPONENT: sourceId } : {}, fn);
}
