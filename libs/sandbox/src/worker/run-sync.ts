import { Script } from 'node:vm';

/**
 * Calls `fn` under `vm`'s `timeout`, so that a synchronous endless loop throws
 * instead of blocking the worker. The watchdog costs tens of microseconds per
 * call, so it can be limited to code that has hung before ('adaptive') or
 * switched off ('never'); the pool's deadline then terminates the worker.
 */
const SLOT = '__essSandboxCall';
const script = new Script(`globalThis.${SLOT}()`, { filename: 'sandbox-call' });
const slot = globalThis as unknown as Record<string, (() => unknown) | undefined>;

export class TimeoutError extends Error {
  override name = 'TimeoutError';
}

export type VmTimeoutMode = 'always' | 'adaptive' | 'never';

let mode: VmTimeoutMode = 'always';
let enabled = true;

export function setVmTimeoutMode(m: VmTimeoutMode): void {
  mode = m;
  enabled = m === 'always';
}

/**
 * Set at the start of each task, before any of its synchronous calls (they all
 * run in the task's first synchronous slice): `guard` marks code that hung before.
 */
export function guardTask(guard: boolean | undefined): void {
  enabled = mode === 'always' || (mode === 'adaptive' && guard === true);
}

export function runSync<T>(fn: () => T, timeoutMs: number, what: string, limitMs = timeoutMs): T {
  if (!enabled) return fn();
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
