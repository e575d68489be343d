/**
 * Piscina worker entry: loads component bundles (cached per worker) and runs
 * describe / execute / options tasks. One task at a time per worker.
 */
import { workerData } from 'node:worker_threads';
import type { DescribeResult, ExecuteResult, OptionsResult } from './types';
import type { WorkerData, WorkerTask } from './worker-protocol';
import { describeError, installConsoleCapture } from './worker/capture';
import { describeDefinition } from './worker/describe';
import { execute } from './worker/execute';
import { loadComponent, setHeapCapMb, setPlatformRequireFrom, trimIfHeapHigh } from './worker/loader';
import { options } from './worker/options';
import { routeTcpThroughEgress } from './worker/egress-client';
import { guardTask, setVmTimeoutMode } from './worker/run-sync';

const data = workerData as WorkerData | undefined;
if (data?.platformRequireFrom) setPlatformRequireFrom(data.platformRequireFrom);
setVmTimeoutMode(data?.vmTimeout ?? 'always');
if (data?.heapMb) setHeapCapMb(data.heapMb);
installConsoleCapture();
if (data?.egressSocket) routeTcpThroughEgress(data.egressSocket);
// Pipedream's Node.js runtime has `defineComponent` as a global (it returns its argument): code written with it loads unchanged.
const globals = globalThis as unknown as Record<string, unknown>;
if (typeof globals.defineComponent !== 'function') globals.defineComponent = <T>(component: T): T => component;
const startTable = data?.startTable ? new BigInt64Array(data.startTable) : undefined;

function describe(task: Extract<WorkerTask, { kind: 'describe' }>): DescribeResult {
  try {
    const { definition, format } = loadComponent(task.bundle, task.timeoutMs);
    return { descriptor: describeDefinition(definition, format, []) };
  } catch (e) {
    return { error: describeError(e) };
  }
}

export default async function handle(task: WorkerTask): Promise<DescribeResult | ExecuteResult | OptionsResult> {
  if (task.startSlot !== undefined && startTable) Atomics.store(startTable, task.startSlot, BigInt(Date.now()));
  guardTask(task.guard);
  try {
    switch (task.kind) {
      case 'execute':
        return await execute(task);
      case 'describe':
        return describe(task);
      case 'options':
        return await options(task);
    }
  } finally {
    trimIfHeapHigh();
  }
}
