import { validateHeaderName, validateHeaderValue } from 'node:http';
import { channelNameProblem, TimeSlicer } from '@app/contracts';
import { responseHeadersProblem } from './response-headers';
import type { EmitRecord, ExecuteResult, ExecuteTask, HttpResponsePayload, LogRecord, SandboxError, SendRecord } from './types';

/**
 * A run's result checked again in the app, with the app's own JSON, before the
 * runner publishes or stores any of it. The sandbox checks the same limits, but
 * in the component's realm: code that replaces `JSON.stringify`/`JSON.parse`
 * there emitted a BigInt, a cycle or a 4 MB event past EVENT_MAX_BYTES, and
 * each failed every publish of the runner again and again (a poison invocation
 * holding its partition's share of in-flight messages). Here an emit, db write,
 * export or send that is not JSON or over its limit is dropped with the later
 * ones, and the run gets the error it would have had in the sandbox.
 */
type Limits = ExecuteTask['limits'];

const SEND_KINDS = new Set(['http', 'email', 's3', 'emit', 'sse']);
const MAX_LOGS = 1000;
const MAX_LOG_CHARS = 64 * 1024;
const MAX_ERROR_CHARS = 64 * 1024;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Bytes of a value's JSON, or why it has none (the app's JSON: no component code runs in this realm). */
function jsonBytes(value: unknown): number | string {
  try {
    const json = JSON.stringify(value);
    return json === undefined ? 0 : Buffer.byteLength(json);
  } catch (e) {
    return `not JSON-serializable (${(e as Error).message.split('\n')[0]})`;
  }
}

const cut = (v: unknown, max: number): string => (typeof v === 'string' ? v : String(v ?? '')).slice(0, max);

function checkedError(e: unknown): SandboxError | undefined {
  if (e === undefined) return undefined;
  if (!isRecord(e)) return { name: 'Error', message: cut(e, MAX_ERROR_CHARS) };
  return { name: cut(e.name, 200) || 'Error', message: cut(e.message, MAX_ERROR_CHARS), ...(e.stack !== undefined ? { stack: cut(e.stack, MAX_ERROR_CHARS) } : {}) };
}

/** A `respond()` payload in the shape the api relays, or undefined when it is not one. */
export function checkedResponse(r: unknown): HttpResponsePayload | undefined {
  if (!isRecord(r) || !Number.isInteger(r.status) || (r.status as number) < 100 || (r.status as number) > 599) return undefined;
  const headers: Record<string, string | string[]> = {};
  if (r.headers !== undefined) {
    if (!isRecord(r.headers)) return undefined;
    for (const [k, v] of Object.entries(r.headers)) {
      const values = Array.isArray(v) ? v : [v];
      if (!values.every((x) => typeof x === 'string')) return undefined;
      try {
        validateHeaderName(k);
        for (const x of values) validateHeaderValue(k, x);
      } catch {
        return undefined;
      }
      headers[k] = Array.isArray(v) ? [...(v as string[])] : (v as string);
    }
  }
  // The bounds respond() checks in the sandbox, again here (the component's realm can change what it checked with).
  if (responseHeadersProblem(headers)) return undefined;
  if (r.body !== undefined && typeof r.body !== 'string') return undefined;
  if (r.bodyEncoding !== undefined && r.bodyEncoding !== 'utf8' && r.bodyEncoding !== 'base64') return undefined;
  return { status: r.status as number, headers, ...(r.body !== undefined ? { body: r.body as string } : {}), ...(r.bodyEncoding ? { bodyEncoding: r.bodyEncoding as 'utf8' | 'base64' } : {}) };
}

/**
 * One run's result, as the runner may publish and store it (see above). Its emits, exports and sends are checked one
 * by one, handing the event loop back between them (`slicer`): a result may be 64 MiB of events.
 */
export async function checkedExecuteResult(value: unknown, limits: Limits, slicer = new TimeSlicer()): Promise<ExecuteResult> {
  if (!isRecord(value)) {
    return { emits: [], dbWrites: {}, logs: [], error: { name: 'SandboxProtocolError', message: 'the sandbox answered the run with something that is not a result' }, durationMs: 0 };
  }
  let error = checkedError(value.error);
  const fail = (name: string, message: string): void => {
    error ??= { name, message };
  };

  const emits: EmitRecord[] = [];
  const rawEmits = Array.isArray(value.emits) ? value.emits : [];
  for (const [i, record] of rawEmits.entries()) {
    if (i >= limits.emitsPerInvocation) {
      fail('EmitLimitError', `emit limit exceeded: at most ${limits.emitsPerInvocation} emits per invocation`);
      break;
    }
    const meta = isRecord(record) && record.meta !== undefined && record.meta !== null ? record.meta : {};
    const bytes = isRecord(record) && isRecord(meta) ? jsonBytes([record.event, meta]) : 'not an emit record';
    if (typeof bytes === 'string') {
      fail('TypeError', `$emit(event): the event or its meta is ${bytes}`);
      break;
    }
    if (bytes > limits.eventMaxBytes) {
      fail('EventSizeLimitError', `event too large: ${bytes} bytes with its meta, the limit is ${limits.eventMaxBytes} bytes`);
      break;
    }
    const channel = channelNameProblem((meta as EmitRecord['meta']).name);
    if (channel) {
      fail('TypeError', `$emit(event, meta): meta.name (the channel) ${channel}`);
      break;
    }
    emits.push({ event: (record as EmitRecord).event, meta: meta as EmitRecord['meta'] });
    if (slicer.due()) await slicer.handBack();
  }

  // JSON here; their size against DB_MAX_BYTES is the runner's check of the whole db (dbSizeBytes).
  let dbWrites: Record<string, unknown> = {};
  if (isRecord(value.dbWrites)) {
    const bytes = jsonBytes(value.dbWrites);
    if (typeof bytes === 'string') fail('TypeError', `$.service.db: a value set is ${bytes}; this run's db writes were discarded`);
    else dbWrites = value.dbWrites;
  }

  const logs: LogRecord[] = [];
  for (const l of Array.isArray(value.logs) ? value.logs.slice(0, MAX_LOGS) : []) {
    if (isRecord(l)) logs.push({ ts: typeof l.ts === 'number' && Number.isFinite(l.ts) ? l.ts : Date.now(), k: cut(l.k, 16), msg: cut(l.msg, MAX_LOG_CHARS) });
  }

  const result: ExecuteResult = { emits, dbWrites, logs, durationMs: typeof value.durationMs === 'number' && Number.isFinite(value.durationMs) ? value.durationMs : 0 };
  if (value.response !== undefined) {
    const response = checkedResponse(value.response);
    if (response) result.response = response;
    else fail('TypeError', 'respond(): the sandbox answered a response that is not { status, headers, body }');
  }
  if ('returnValue' in value || 'exports' in value || 'sends' in value) {
    const within = (v: unknown, what: string, name: string): boolean => {
      const bytes = jsonBytes(v);
      if (typeof bytes === 'string') fail('TypeError', `${what}: the value is ${bytes}`);
      else if (bytes > limits.eventMaxBytes) fail(name, `${what}: the value is ${bytes} bytes of JSON, the limit is ${limits.eventMaxBytes} bytes (EVENT_MAX_BYTES)`);
      else return true;
      return false;
    };
    if (value.returnValue !== undefined && within(value.returnValue, 'the return value of run', 'ReturnValueSizeLimitError')) result.returnValue = value.returnValue;
    const exports: Record<string, unknown> = {};
    if (isRecord(value.exports)) {
      for (const [k, v] of Object.entries(value.exports)) {
        if (k === '__proto__') continue;
        if (within(v, `$.export("${k}")`, 'ExportSizeLimitError')) exports[k] = v;
        if (slicer.due()) await slicer.handBack();
      }
    }
    result.exports = exports;
    const sends: SendRecord[] = [];
    for (const s of Array.isArray(value.sends) ? value.sends : []) {
      if (sends.length >= limits.emitsPerInvocation) {
        fail('SendLimitError', `send limit exceeded: at most ${limits.emitsPerInvocation} $.send calls per workflow run (EMITS_PER_INVOCATION)`);
        break;
      }
      if (!isRecord(s) || typeof s.kind !== 'string' || !SEND_KINDS.has(s.kind)) {
        fail('TypeError', '$.send: the sandbox answered a send of no known kind');
        break;
      }
      if (!within(s.payload, `$.send.${s.kind}()`, 'SendSizeLimitError')) break;
      sends.push({ kind: s.kind as SendRecord['kind'], payload: s.payload });
      if (slicer.due()) await slicer.handBack();
    }
    result.sends = sends;
    if (isRecord(value.exit)) result.exit = value.exit.reason === undefined ? {} : { reason: cut(value.exit.reason, MAX_ERROR_CHARS) };
  }
  if (error) result.error = error;
  return result;
}
