import { AsyncLocalStorage } from 'node:async_hooks';
import { Script } from 'node:vm';

/**
 * Calls `fn` under `vm`'s `timeout`, so that a synchronous endless loop throws
 * instead of blocking its thread. The watchdog costs tens of microseconds per
 * call, so it can be limited to code that has hung before ('adaptive') or
 * switched off ('never'); at the deadline the pool then terminates the worker
 * (on a sandbox process's own thread, the app stops the process).
 */
const SLOT = '__essSandboxCall';
const script = new Script(`globalThis.${SLOT}()`, { filename: 'sandbox-call' });
const slot = globalThis as unknown as Record<string, (() => unknown) | undefined>;

export class TimeoutError extends Error {
  override name = 'TimeoutError';
}

export type VmTimeoutMode = 'always' | 'adaptive' | 'never';

let mode: VmTimeoutMode = 'always';
/** Whether the task being run has its synchronous parts bounded: per task, as several may be in flight on one thread. */
const bounded = new AsyncLocalStorage<boolean>();

export function setVmTimeoutMode(m: VmTimeoutMode): void {
  mode = m;
}

/** Runs one task: `guard` marks code that hung before (bounded in 'adaptive' mode). */
export function guardedTask<T>(guard: boolean | undefined, fn: () => Promise<T>): Promise<T> {
  return bounded.run(mode === 'always' || (mode === 'adaptive' && guard === true), fn);
}

export function runSync<T>(fn: () => T, timeoutMs: number, what: string, limitMs = timeoutMs): T {
  if (!(bounded.getStore() ?? mode === 'always')) return fn();
  slot[SLOT] = fn;
  try {
    return script.runInThisContext({ timeout: Math.max(1, Math.floor(timeoutMs)) }) as T;
  } catch (e) {
    if ((e as NodeJS.ErrnoException)?.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
      throw new TimeoutError(`${what} timed out after ${limitMs} ms`);
    }
    throw e;
  } finally {
    slot[SLOT] = undefined;
  }
}

/** Resolves with `p` or rejects with a TimeoutError once `ms` have passed. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string, limitMs = ms): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`${what} timed out after ${limitMs} ms`)), Math.max(0, ms));
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
