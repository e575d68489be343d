/**
 * What the pool (main thread) sends to its Piscina workers. Internal to the
 * sandbox: callers use `SandboxPool`'s methods and the types in types.ts.
 */
import type { MessagePort } from 'node:worker_threads';
import type { ExecuteBatchTask, ExecuteTask, HttpResponsePayload, OptionsInput, PreviousProp } from './types';

/** A component compiled to a CommonJS bundle file, with its installed dependencies. */
export interface BundleRef {
  /** Unique per bundle content and dependency set; the worker's cache key. */
  key: string;
  /** The bundle file (CommonJS). */
  path: string;
  /** Directory holding `node_modules` for the component's npm imports, if any. */
  depsDir?: string;
  format: 'cjs' | 'esm';
}

export interface WorkerData {
  /** A file inside the project: `@pipedream/platform` is resolved from here when not installed. */
  platformRequireFrom: string;
  vmTimeout: 'always' | 'adaptive' | 'never';
  /** resourceLimits.maxOldGenerationSizeMb of the worker. */
  heapMb: number;
  /** One BigInt64 slot per task in flight, shared by the pool and all its workers. */
  startTable: SharedArrayBuffer;
  /** Unix socket of the egress proxy (isolated sandboxes): outbound TCP goes through it. */
  egressSocket?: string;
}

export interface WorkerDescribeTask {
  kind: 'describe';
  bundle: BundleRef;
  timeoutMs: number;
}

export interface WorkerExecuteTask extends Omit<ExecuteTask, 'kind' | 'code' | 'codeHash' | 'dependencyVersions'> {
  kind: 'execute';
  bundle: BundleRef;
  /** Receives the `respond()` payload as soon as it is called. */
  port?: MessagePort;
}

/** One source's invocations in a batch task, with what its runs share (props, db, limits…). */
export type WorkerBatchPart = Omit<ExecuteBatchTask, 'kind' | 'code' | 'codeHash' | 'dependencyVersions' | 'account'>;

/**
 * Invocations of `run` of one bundle as one task: the invocations of one source (a part) one after the other, the
 * parts (sources of one account running the same code) side by side, as separate tasks would run.
 */
export interface WorkerExecuteBatchTask {
  kind: 'executeBatch';
  bundle: BundleRef;
  parts: WorkerBatchPart[];
  /** Receives `{ i, r }`: the `respond()` payload of item `i` (numbered across the parts, in order), as soon as it is called. */
  port?: MessagePort;
}

/** What a task's response port carries: an execute task's `respond()` payload, or a batch item's. */
export type ResponseMessage = HttpResponsePayload | { i: number; r: HttpResponsePayload };

export interface WorkerOptionsTask {
  kind: 'options';
  bundle: BundleRef;
  propName: string;
  input: OptionsInput;
  timeoutMs: number;
  /** Largest JSON of the answer (checked before it leaves the sandbox). */
  maxBytes: number;
}

export interface WorkerAdditionalPropsTask {
  kind: 'additionalProps';
  bundle: BundleRef;
  /** Values of the static props (`this.<prop>` inside `additionalProps()`; app props as `{ $auth }`). */
  configuredProps: Record<string, unknown>;
  /** The props it added last time (`previousPropDefs` holds them after the static ones); none on a first deploy. */
  previousProps?: PreviousProp[];
  timeoutMs: number;
  /** Most props it may add, and the largest JSON of their descriptions (checked before they leave the sandbox). */
  maxProps: number;
  maxBytes: number;
}

export type WorkerTask = (WorkerDescribeTask | WorkerExecuteTask | WorkerExecuteBatchTask | WorkerOptionsTask | WorkerAdditionalPropsTask) & {
  /** Index into WorkerData.startTable where the worker stores Date.now() when it starts the task (0 while queued). */
  startSlot?: number;
  /** This code hung a worker before: bound its synchronous parts with vm's timeout ('adaptive' mode). */
  guard?: boolean;
};
