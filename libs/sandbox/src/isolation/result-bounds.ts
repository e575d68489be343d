import { serialize } from 'node:v8';
import { sandboxError, type TaskOutcome } from '../worker-pool';
import type { ResponseMessage, WorkerTask } from '../worker-protocol';
import { cutInPieces, PIECE_BYTES } from './frame-pieces';

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

const NULL_BYTES = serialize(null).byteLength;

/**
 * `message` serialized once (the frame body the host sends), and how many bytes of it its field `key` takes:
 * as many as `serialize(message[key])` would give (the envelope's own bytes, measured with the field null, are
 * taken off), so the bound does not depend on the envelope.
 */
function serializedWith(message: Record<string, unknown>, key: string): { body: Buffer; bytes: number } {
  const body = serialize(message);
  const envelope = serialize({ ...message, [key]: null }).byteLength - NULL_BYTES;
  return { body, bytes: body.byteLength - envelope };
}

/**
 * The `done` message of task `id` as the host sends it to the app (frame bodies: the answer's pieces, if any, then
 * the message, frame-pieces.ts), carrying a ResultSizeLimitError instead of the outcome when that is larger than the
 * task's cap or cannot be serialized. Measured in the host's main thread, which no component code can reach (the
 * checks in the worker share the component's realm, whose JSON and Buffer it may have replaced), so that no account
 * can make an app hold an answer of any size: a string repeated by reference is small in the sandbox and large once
 * serialized.
 */
export function doneBodies(id: number, task: WorkerTask, out: TaskOutcome<unknown>, cap = resultCapBytes(task)): Buffer[] {
  const refused = (message: string): Buffer[] => [serialize({ t: 'done', id, out: { failed: sandboxError('ResultSizeLimitError', message) } })];
  let sized: { body: Buffer; bytes: number };
  try {
    sized = serializedWith({ t: 'done', id, out }, 'out');
  } catch (e) {
    // Nested too deeply for the serializer (an emit of [[[…]]] 3,000 levels deep): thrown here, it ended the sandbox process.
    return refused(`${what(task)} cannot be sent back: ${(e as Error).message}`);
  }
  if (sized.bytes > cap) return refused(`${what(task)} is ${sized.bytes} bytes, over the ${cap} bytes a sandbox may send back`);
  if (sized.body.byteLength <= PIECE_BYTES || !('value' in out)) return [sized.body];
  try {
    const { bodies, shell } = cutInPieces(id, out.value, cap);
    return [...bodies, serialize({ t: 'done', id, out: { value: shell } })];
  } catch (e) {
    return refused(`${what(task)} cannot be sent back: ${(e as Error).message}`);
  }
}

/**
 * The `response` message of task `id` (frame bodies, as doneBodies), or undefined when the payload cannot go to the
 * app (an oversized one fails its run through `doneBodies`).
 */
export function responseBodies(id: number, payload: ResponseMessage, cap = RESULT_MAX_BYTES): Buffer[] | undefined {
  try {
    const sized = serializedWith({ t: 'response', id, payload }, 'payload');
    if (sized.bytes > cap) return undefined;
    if (sized.body.byteLength <= PIECE_BYTES) return [sized.body];
    const { bodies, shell } = cutInPieces(id, payload, cap);
    return [...bodies, serialize({ t: 'response', id, payload: shell })];
  } catch {
    return undefined;
  }
}
