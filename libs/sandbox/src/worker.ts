/**
 * Piscina worker entry: loads component bundles (cached per worker) and runs
 * describe / execute / options tasks. One task at a time per worker.
 */
import { workerData } from 'node:worker_threads';
import type { AdditionalPropsResult, DescribeResult, ExecuteResult, OptionsResult } from './types';
import type { WorkerData, WorkerTask } from './worker-protocol';
import { describeError, installConsoleCapture } from './worker/capture';
import { describeDefinition } from './worker/describe';
import { execute } from './worker/execute';
import { executeBatch } from './worker/execute-batch';
import { loadComponent, setHeapCapMb, setPlatformRequireFrom, trimIfHeapHigh } from './worker/loader';
import { additionalProps, options } from './worker/options';
import { routeTcpThroughEgress } from './worker/egress-client';
import { guardTask, setVmTimeoutMode } from './worker/run-sync';
import { refuseNestedWorkers } from './worker/no-nested-workers';
import { installInvocationEnv } from './worker/process-env';

const data = workerData as WorkerData | undefined;
if (data?.platformRequireFrom) setPlatformRequireFrom(data.platformRequireFrom);
setVmTimeoutMode(data?.vmTimeout ?? 'always');
if (data?.heapMb) setHeapCapMb(data.heapMb);
installConsoleCapture();
installInvocationEnv();
refuseNestedWorkers();
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

async function describe(task: Extract<WorkerTask, { kind: 'describe' }>): Promise<DescribeResult> {
  try {
    const { definition, format } = await loadComponent(task.bundle, task.timeoutMs);
    return { descriptor: describeDefinition(definition, format, []) };
  } catch (e) {
    return { error: describeError(e) };
  }
}

export default async function handle(task: WorkerTask): Promise<DescribeResult | ExecuteResult | ExecuteResult[] | OptionsResult | AdditionalPropsResult> {
  if (task.startSlot !== undefined && startTable) Atomics.store(startTable, task.startSlot, BigInt(Date.now()));
  guardTask(task.guard);
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
}
