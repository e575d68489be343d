import type { WorkerTask } from '../worker-protocol';
import type { FromHost } from './host-protocol';
import { resultCapBytes } from './result-bounds';
import { checkedPiece } from './frame-pieces';

/** Room for a message's envelope (`{ t, id, out }`) around an answer, and the most a log line or `ready` may take. */
export const FRAME_ENVELOPE_BYTES = 64 * 1024;

/** The largest answer (a result or a `respond()` payload) a task may have, as the host measures it. */
export function frameCapBytes(task: WorkerTask): number {
  return resultCapBytes(task);
}

const LEVELS = new Set(['info', 'warn', 'error', 'debug']);
/** Fields of the app's own log lines, which a sandbox's line must not set. */
const RESERVED_LOG_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'account']);
const LOG_FIELDS_MAX = 16;
const LOG_VALUE_MAX = 2000;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A message read from a sandbox's channel, checked for the shape the host sends: the message,
 * or why it is not one (the app then stops the sandbox). Code in the host's worker threads can
 * write to the channel, so nothing here is taken on trust.
 */
export function checkedFromHost(m: unknown): FromHost | string {
  if (!isRecord(m)) return 'a message that is not an object';
  switch (m.t) {
    case 'ready':
      return { t: 'ready' };
    case 'done': {
      if (!Number.isSafeInteger(m.id)) return 'an answer without a task id';
      const out = m.out;
      if (!isRecord(out)) return 'an answer without an outcome';
      if ('failed' in out) {
        const f = out.failed;
        if (!isRecord(f) || typeof f.name !== 'string' || typeof f.message !== 'string') return 'a failure without a name and message';
        return { t: 'done', id: m.id as number, out: { failed: { name: f.name, message: f.message } } };
      }
      if (!('value' in out)) return 'an answer without a value';
      return { t: 'done', id: m.id as number, out: { value: out.value } };
    }
    case 'response':
      if (!Number.isSafeInteger(m.id)) return 'a response without a task id';
      if (!isRecord(m.payload)) return 'a response that is not an object';
      return { t: 'response', id: m.id as number, payload: m.payload as never };
    case 'piece':
      return checkedPiece(m);
    case 'log':
      if (typeof m.level !== 'string' || !LEVELS.has(m.level)) return 'a log line of no known level';
      return { t: 'log', level: m.level as 'info', obj: logFields(m.obj), msg: typeof m.msg === 'string' ? m.msg.slice(0, LOG_VALUE_MAX) : undefined };
    default:
      return 'a message of no known type';
  }
}

/**
 * The fields of a sandbox's log line as the app logs them: the host logs a few plain values (a task's kind, a
 * limit, an error's message), so only those pass — up to 16 fields of plain names whose values are strings
 * (shortened), numbers, booleans or null, none of the app's own fields. Nothing nested reaches the app's logger.
 */
export function logFields(obj: unknown): Record<string, string | number | boolean | null> {
  const out: Record<string, string | number | boolean | null> = {};
  if (!isRecord(obj)) return out;
  let n = 0;
  for (const k of Object.keys(obj)) {
    if (n >= LOG_FIELDS_MAX) break;
    if (!/^[a-z][a-z0-9_]{0,63}$/i.test(k) || RESERVED_LOG_FIELDS.has(k)) continue;
    const v = obj[k];
    if (typeof v === 'string') out[k] = v.slice(0, LOG_VALUE_MAX);
    else if ((typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean' || v === null) out[k] = v;
    else continue;
    n++;
  }
  return out;
}
