import { AsyncLocalStorage } from 'node:async_hooks';
import { format } from 'node:util';
import type { LogRecord, SandboxError } from '../types';
import { mapStack } from './stack-map';

/**
 * `console.*` inside components becomes log records of the invocation whose
 * code wrote them. AsyncLocalStorage follows the invocation through its
 * promises and timers, so output of stray async code (a run that timed out, a
 * promise nobody awaited) lands in its own finished invocation — never in the
 * logs of another source that happens to run later on the same worker.
 */
const MAX_LOGS = 1000;
const MAX_MSG = 16 * 1024;

const als = new AsyncLocalStorage<LogRecord[]>();

/** Runs `fn` with `console.*` going into `logs`. */
export function withLogs<T>(logs: LogRecord[], fn: () => Promise<T>): Promise<T> {
  return als.run(logs, fn);
}

export function pushLog(k: string, msg: string): void {
  const logs = als.getStore();
  if (!logs || logs.length >= MAX_LOGS) return;
  logs.push({ ts: Date.now(), k, msg: msg.length > MAX_MSG ? `${msg.slice(0, MAX_MSG)}… (truncated)` : msg });
}

const LEVELS = ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const;

export function installConsoleCapture(): void {
  const original = globalThis.console;
  const c = Object.create(original) as Console & Record<string, unknown>;
  for (const level of LEVELS) {
    c[level] = (...args: unknown[]) => pushLog(`console.${level}`, format(...args));
  }
  c.dir = (obj: unknown) => pushLog('console.dir', format('%O', obj));
  c.table = (...args: unknown[]) => pushLog('console.table', format(...args));
  c.assert = (cond: unknown, ...args: unknown[]) => {
    if (!cond) pushLog('console.error', `Assertion failed${args.length ? `: ${format(...args)}` : ''}`);
  };
  globalThis.console = c;
  process.on('uncaughtException', (e) => pushLog('console.error', `Uncaught exception: ${describeError(e).stack ?? String(e)}`));
  process.on('unhandledRejection', (e) => pushLog('console.error', `Unhandled rejection: ${describeError(e).stack ?? String(e)}`));
  // A component must not end its worker thread.
  process.exit = ((code?: number) => {
    throw new Error(`process.exit(${code ?? ''}) is not allowed in a component`);
  }) as typeof process.exit;
}

export function describeError(e: unknown): SandboxError {
  if (e instanceof Error || (e && typeof e === 'object' && 'message' in e)) {
    const err = e as Error;
    return { name: String(err.name || 'Error'), message: String(err.message), stack: typeof err.stack === 'string' ? mapStack(err.stack) : undefined };
  }
  return { name: 'Error', message: typeof e === 'string' ? e : safeString(e) };
}

function safeString(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
