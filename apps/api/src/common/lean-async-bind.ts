import { AsyncResource } from 'node:async_hooks';

type Bind = (this: AsyncResource, fn: (...args: unknown[]) => unknown, thisArg?: unknown) => (...args: unknown[]) => unknown;

/**
 * Fastify binds every request body's parser callback with `AsyncResource#bind`. Node 20's `bind` also
 * defines the deprecated (DEP0172) `asyncResource` accessor on each bound function, built with
 * `util.deprecate` every time: about 12 µs per call, several percent of the api's CPU per HTTP request.
 * This replaces it, in the api process, with the same binding without that accessor. It does nothing on
 * a Node whose `bind` no longer defines it.
 */
export function installLeanAsyncBind(): void {
  const probe = new AsyncResource('lean-async-bind-probe').bind(() => undefined);
  if (!Object.getOwnPropertyDescriptor(probe, 'asyncResource')) return;
  const lean: Bind = function bind(this: AsyncResource, fn, thisArg) {
    if (typeof fn !== 'function') throw new TypeError(`The "fn" argument must be of type function. Received ${typeof fn}`);
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const resource = this;
    const bound =
      thisArg === undefined
        ? function (this: unknown, ...args: unknown[]): unknown {
            return resource.runInAsyncScope(fn, this, ...args);
          }
        : (...args: unknown[]): unknown => resource.runInAsyncScope(fn, thisArg, ...args);
    Object.defineProperty(bound, 'length', { configurable: true, enumerable: false, writable: false, value: fn.length });
    return bound;
  };
  (AsyncResource.prototype as unknown as { bind: Bind }).bind = lean;
}
