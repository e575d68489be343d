/**
 * The component runtime: loads component bundles (cached) and runs describe /
 * execute / options tasks. It runs on a Piscina worker thread (worker.ts) or on
 * the main thread of an account's sandbox process (SANDBOX_RUN_IN=process), where
 * several tasks may be in flight at once.
 */
import type { AdditionalPropsResult, DescribeResult, ExecuteResult, OptionsResult } from '../types';
import type { WorkerData, WorkerTask } from '../worker-protocol';
import { describeError, installConsoleCapture } from './capture';
import { describeDefinition } from './describe';
import { execute } from './execute';
import { executeBatch } from './execute-batch';
import { loadComponent, setHeapCapMb, setPlatformRequireFrom, trimIfHeapHigh } from './loader';
import { additionalProps, options } from './options';
import { routeTcpThroughEgress } from './egress-client';
import { guardedTask, setVmTimeoutMode } from './run-sync';
import { refuseBuiltins } from './refused-builtins';
import { installInvocationEnv } from './process-env';

export type TaskHandler = (task: WorkerTask) => Promise<DescribeResult | ExecuteResult | ExecuteResult[] | OptionsResult | AdditionalPropsResult>;

/** Sets the thread up for component code (once per thread) and returns the task handler. */
export function startRuntime(data: Partial<WorkerData> | undefined): TaskHandler {
  if (data?.platformRequireFrom) setPlatformRequireFrom(data.platformRequireFrom);
  setVmTimeoutMode(data?.vmTimeout ?? 'always');
  if (data?.heapMb) setHeapCapMb(data.heapMb);
  installConsoleCapture();
  installInvocationEnv();
  refuseBuiltins();
  if (data?.egressSocket) routeTcpThroughEgress(data.egressSocket);
  // Pipedream's Node.js runtime has `defineComponent` as a global (it returns its argument): code written with it loads unchanged.
  const globals = globalThis as unknown as Record<string, unknown>;
  if (typeof globals.defineComponent !== 'function') globals.defineComponent = <T>(component: T): T => component;
  // Globals of Pipedream's Node runtime that this Node may lack: Node 20 has WebSocket only behind a flag
  // (and a worker given its own flags would leave the permission model), so it comes from undici,
  // the same implementation; its connections go through the egress proxy like fetch's.
  if (typeof globals.WebSocket === 'undefined') {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const undici = require('undici') as Record<string, unknown>;
    for (const name of ['WebSocket', 'CloseEvent', 'MessageEvent']) if (typeof globals[name] === 'undefined') globals[name] = undici[name];
  }
  const startTable = data?.startTable ? new BigInt64Array(data.startTable) : undefined;

  return (task) => {
    if (task.startSlot !== undefined && startTable) Atomics.store(startTable, task.startSlot, BigInt(Date.now()));
    return guardedTask(task.guard, async () => {
      try {
        switch (task.kind) {
          case 'execute':
            return await execute(task);
          case 'executeBatch':
            return await executeBatch(task);
          case 'describe':
            return describe(task);
          case 'options':
            return await options(task);
          case 'additionalProps':
            return await additionalProps(task);
        }
      } finally {
        trimIfHeapHigh();
      }
    });
  };
}

async function describe(task: Extract<WorkerTask, { kind: 'describe' }>): Promise<DescribeResult> {
  try {
    const { definition, format } = await loadComponent(task.bundle, task.timeoutMs);
    return { descriptor: describeDefinition(definition, format, []) };
  } catch (e) {
    return { error: describeError(e) };
  }
}

