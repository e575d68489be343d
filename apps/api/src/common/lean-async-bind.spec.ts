import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { installLeanAsyncBind } from './lean-async-bind';

describe('installLeanAsyncBind', () => {
  beforeAll(() => installLeanAsyncBind());

  it('binds a function to the async context it was bound in, without the deprecated accessor', async () => {
    const als = new AsyncLocalStorage<string>();
    const bound = als.run('request-1', () => new AsyncResource('test').bind((a: unknown, b: unknown) => [als.getStore(), a, b]));
    expect(Object.getOwnPropertyDescriptor(bound, 'asyncResource')).toBeUndefined();
    expect(bound.length).toBe(2);
    const seen = await als.run('other', () => new Promise((resolve) => setImmediate(() => resolve(bound(1, 2)))));
    expect(seen).toEqual(['request-1', 1, 2]);
  });

  it('keeps `this` as the call gives it, or as bound', () => {
    const r = new AsyncResource('test');
    const obj = { tag: 'caller', f: r.bind(function (this: { tag: string }) { return this.tag; }) };
    expect(obj.f()).toBe('caller');
    const bindWith = r.bind as unknown as (fn: (this: { tag: string }) => string, thisArg: unknown) => (this: unknown) => string;
    expect(bindWith.call(r, function (this: { tag: string }) { return this.tag; }, { tag: 'bound' }).call({ tag: 'caller' })).toBe('bound');
    // By message, not class: an in-process api test in the same jest worker may have installed the lean bind from
    // another realm first (the prototype is the process's), whose TypeError is another class.
    expect(() => r.bind('x' as unknown as () => void)).toThrow(/The "fn" argument must be of type function/);
  });
});
