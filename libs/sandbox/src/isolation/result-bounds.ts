import { serialize } from 'node:v8';
import { sandboxError, type TaskOutcome } from '../worker-pool';
import type { ResponseMessage, WorkerTask } from '../worker-protocol';

/** Most bytes one answer of a sandbox may carry to its app (as the IPC channel serializes it). */
export const RESULT_MAX_BYTES = 64 * 1024 * 1024;
/** Most bytes of a component's description (props, methods, its apps' propDefinitions). */
export const DESCRIPTION_MAX_BYTES = 8 * 1024 * 1024;

/** The cap of a task's answer: options() and additionalProps() have their own (JSON) bound, with room for the serialization's overhead. */
export function resultCapBytes(task: WorkerTask): number {
  if (task.kind === 'describe') return DESCRIPTION_MAX_BYTES;
  if (task.kind === 'options' || task.kind === 'additionalProps') return Math.min(RESULT_MAX_BYTES, 2 * task.maxBytes + 64 * 1024);
  return RESULT_MAX_BYTES;
}

const what = (task: WorkerTask): string =>
  task.kind === 'describe' ? "the component's description" : task.kind === 'execute' ? `the result of ${task.method}` : task.kind === 'executeBatch' ? 'the result of run' : `the answer of ${task.kind}()`;

/**
 * The outcome as the host sends it to the app, or a ResultSizeLimitError when it is larger than the
 * task's cap. Measured in the host's main thread, which no component code can reach (the checks in
 * the worker share the component's realm, whose JSON and Buffer it may have replaced), so that no
 * account can make an app hold an answer of any size: a string repeated by reference is small in
 * the sandbox and large once serialized.
 */
export function boundedOutcome(task: WorkerTask, out: TaskOutcome<unknown>, cap = resultCapBytes(task)): TaskOutcome<unknown> {
  let bytes: number;
  try {
    bytes = serialize(out).byteLength;
  } catch (e) {
    // Nested too deeply for the serializer (an emit of [[[…]]] 3,000 levels deep): thrown here, it ended the sandbox process.
    return { failed: sandboxError('ResultSizeLimitError', `${what(task)} cannot be sent back: ${(e as Error).message}`) };
  }
  if (bytes <= cap) return out;
  return { failed: sandboxError('ResultSizeLimitError', `${what(task)} is ${bytes} bytes, over the ${cap} bytes a sandbox may send back`) };
}

/** Whether a `respond()` payload may go to the app (an oversized one fails its run through `boundedOutcome`). */
export function responseFits(payload: ResponseMessage, cap = RESULT_MAX_BYTES): boolean {
  try {
    return serialize(payload).byteLength <= cap;
  } catch {
    return false;
  }
}
