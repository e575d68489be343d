import { validateHeaderName, validateHeaderValue } from 'node:http';
import { types } from 'node:util';
import type { EmitRecord, ExecuteTask, HttpResponsePayload, LogRecord, SendRecord } from '../types';
import { isObject } from './plan';
import { responseHeadersProblem } from '../response-headers';

/** Where `respond()` sends its payload at once: the task's MessagePort, or one item's share of a batch task's port. */
export interface ResponsePort {
  postMessage(payload: HttpResponsePayload): void;
  close(): void;
}

/** Everything one invocation collects; `closed` once it finished (late calls fail). */
export interface InvocationState {
  limits: ExecuteTask['limits'];
  snapshot: Record<string, unknown>;
  written: Map<string, string | undefined>;
  emits: EmitRecord[];
  logs: LogRecord[];
  sends: SendRecord[];
  exports: Record<string, unknown>;
  response?: HttpResponsePayload;
  port?: ResponsePort;
  closed: boolean;
  /** An earlier step of the workflow run already called `$.respond()`. */
  respondedBefore?: boolean;
  /** Set by `$.flow.exit()`. */
  exit?: { reason?: string };
}

export class SandboxLimitError extends Error {
  constructor(
    override name: string,
    message: string,
  ) {
    super(message);
  }
}

function ensureOpen(state: InvocationState, what: string): void {
  if (state.closed) throw new Error(`${what} was called after the invocation finished`);
}

/** JSON text of a value, or a clear TypeError naming where it came from. */
export function toJson(value: unknown, where: string): string | undefined {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (e) {
    throw new TypeError(`${where}: the value is not JSON-serializable (${thrownText(e)})`);
  }
  return json;
}

/** What a toJSON or getter threw, as text: a thrown string or other non-Error is shown as itself, not as `undefined`. */
function thrownText(e: unknown): string {
  try {
    return e instanceof Error ? e.message : String(e);
  } catch {
    return 'a value that cannot be shown';
  }
}

/** A JSON copy of a value of at most `maxBytes` bytes of JSON, else a SandboxLimitError named `limitName`. */
export function sizedClone(value: unknown, where: string, maxBytes: number, limitName: string): unknown {
  const json = toJson(value, where);
  if (json === undefined) return undefined;
  const size = Buffer.byteLength(json);
  if (size > maxBytes) throw new SandboxLimitError(limitName, `${where}: the value is ${size} bytes of JSON, the limit is ${maxBytes} bytes (EVENT_MAX_BYTES)`);
  return JSON.parse(json);
}

/** Bytes one `$.service.db` entry counts against the cap: its key plus the JSON of its value. */
export function dbEntryBytes(key: string, value: unknown): number {
  return Buffer.byteLength(key) + Buffer.byteLength(JSON.stringify(value) ?? '');
}

/** Size of a whole `$.service.db`, measured as the sandbox measures it (sum of `dbEntryBytes`). */
export function dbSizeBytes(db: Record<string, unknown>): number {
  let total = 0;
  for (const [k, v] of Object.entries(db)) total += dbEntryBytes(k, v);
  return total;
}

/** `$.service.db`: synchronous reads of the snapshot, writes collected as a change set under a size cap. */
export function makeDb(state: InvocationState) {
  let sizes: Map<string, number> | undefined;
  let total = 0;
  const measure = () => {
    sizes = new Map();
    for (const [k, v] of Object.entries(state.snapshot)) {
      const size = dbEntryBytes(k, v);
      sizes.set(k, size);
      total += size;
    }
  };
  return {
    get(key: unknown): unknown {
      const k = String(key);
      if (state.written.has(k)) {
        const json = state.written.get(k);
        return json === undefined ? undefined : JSON.parse(json);
      }
      if (!Object.hasOwn(state.snapshot, k)) return undefined;
      const v = state.snapshot[k];
      return typeof v === 'object' && v !== null ? structuredClone(v) : v;
    },
    set(key: unknown, value: unknown): void {
      ensureOpen(state, 'db.set()');
      const k = String(key);
      const json = value === undefined ? undefined : toJson(value, `db.set("${k}")`);
      if (value !== undefined && json === undefined) {
        throw new TypeError(`db.set("${k}"): the value is not JSON-serializable (${typeof value})`);
      }
      if (!sizes) measure();
      const size = json === undefined ? 0 : Buffer.byteLength(k) + Buffer.byteLength(json);
      const next = total - (sizes!.get(k) ?? 0) + size;
      if (next > state.limits.dbMaxBytes) {
        throw new SandboxLimitError('DbSizeLimitError', `$.service.db size limit exceeded: db.set("${k}") would make the db ${next} bytes, the limit is ${state.limits.dbMaxBytes} bytes`);
      }
      total = next;
      sizes!.set(k, size);
      state.written.set(k, json);
    },
  };
}

/** Epoch milliseconds from milliseconds, seconds, an ISO string or a numeric string. */
export function normalizeTs(v: unknown): number | undefined {
  let n: number;
  if (typeof v === 'number') n = v;
  else if (typeof v === 'string') n = /^\s*-?\d+(\.\d+)?\s*$/.test(v) ? Number(v) : Date.parse(v);
  else if (v instanceof Date) n = v.getTime();
  else return undefined;
  if (!Number.isFinite(n)) return undefined;
  if (Math.abs(n) < 1e11) n *= 1000; // seconds
  return Math.round(n);
}

export function makeEmit(state: InvocationState) {
  return function $emit(event?: unknown, meta?: unknown): void {
    ensureOpen(state, '$emit()');
    if (state.emits.length >= state.limits.emitsPerInvocation) {
      throw new SandboxLimitError('EmitLimitError', `emit limit exceeded: at most ${state.limits.emitsPerInvocation} emits per invocation`);
    }
    const json = toJson(event, '$emit(event)');
    const size = json === undefined ? 0 : Buffer.byteLength(json);
    if (size > state.limits.eventMaxBytes) {
      throw new SandboxLimitError('EventSizeLimitError', `event too large: ${size} bytes, the limit is ${state.limits.eventMaxBytes} bytes`);
    }
    let m: EmitRecord['meta'] = {};
    if (meta !== undefined && meta !== null) {
      if (!isObject(meta)) throw new TypeError('$emit(event, meta): meta must be an object like { id, name, summary, ts }');
      const ts = meta.ts;
      const metaJson = toJson(meta, '$emit(event, meta)') ?? '{}';
      // The event travels with its meta in one message: a long summary or id counts against the same limit.
      const total = size + Buffer.byteLength(metaJson);
      if (total > state.limits.eventMaxBytes) {
        throw new SandboxLimitError('EventSizeLimitError', `event too large: ${total} bytes with its meta (id, name, summary), the limit is ${state.limits.eventMaxBytes} bytes`);
      }
      m = JSON.parse(metaJson) as EmitRecord['meta'];
      if (ts !== undefined) {
        const n = normalizeTs(ts);
        if (n === undefined) delete m.ts;
        else m.ts = n;
      }
    }
    state.emits.push({ event: json === undefined ? undefined : JSON.parse(json), meta: m });
  };
}

/** Bytes a component may answer with: a Buffer or any other TypedArray or DataView, an ArrayBuffer (of any realm). */
function isBinary(v: unknown): v is ArrayBufferView | ArrayBuffer | SharedArrayBuffer {
  return ArrayBuffer.isView(v) || types.isAnyArrayBuffer(v);
}

/** What a value is, for an error message (never its text: a header value may be a secret). */
function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  return typeof v === 'undefined' ? 'undefined' : `a ${typeof v}`;
}

/** One header value as it is sent: a string as given, a number, boolean or bigint as its text (as Node's setHeader). */
function headerText(name: string, v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  // String() of anything else is no header anyone meant: `[object Object]`, a function's source, `Symbol(x)`.
  throw new TypeError(`respond(): header ${JSON.stringify(name)}: a value must be a string, a number or a boolean, or a list of them; got ${kindOf(v)}`);
}

/** The status `respond()` was given, as a number; a numeric string ("201") is taken as Node's writeHead takes it. */
function statusOf(raw: unknown): number {
  const status = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(status) || status < 100 || status > 599) {
    const shown = typeof raw === 'string' ? JSON.stringify(raw.slice(0, 100)) : typeof raw === 'number' ? String(raw) : kindOf(raw);
    throw new RangeError(`respond(): status must be an integer from 100 to 599, got ${shown}`);
  }
  return status;
}

/**
 * Header values as they are sent: null or undefined leaves the header out, a list is that header repeated (one line
 * per value, as Node's setHeader sends it; an empty list sends none), anything else is headerText.
 */
function headersOf(raw: unknown): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  if (raw === undefined || raw === null) return headers;
  // A Map or a fetch Headers has no own entries: taken as an object, every header was dropped without a word.
  const tag = Array.isArray(raw) ? 'a list' : typeof raw !== 'object' ? kindOf(raw) : Object.prototype.toString.call(raw).slice(8, -1);
  if (!isObject(raw) || tag !== 'Object') {
    const hint = tag === 'Map' || tag === 'Headers' ? ' (Object.fromEntries() makes one of it)' : '';
    throw new TypeError(`respond(): headers must be an object of names and values, got ${tag.startsWith('a ') ? tag : `a ${tag}`}${hint}`);
  }
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined || v === null) continue;
    const value = Array.isArray(v) ? v.map((one) => headerText(k, one)) : headerText(k, v);
    if (Array.isArray(value) && value.length === 0) continue;
    // Checked here, so a bad header is this run's clear error rather than a failed answer at the api.
    try {
      validateHeaderName(k);
      for (const one of [value].flat()) validateHeaderValue(k, one);
    } catch (e) {
      throw new TypeError(`respond(): invalid header ${JSON.stringify(k)}: ${(e as Error).message}`);
    }
    headers[k] = value;
  }
  return headers;
}

/** Validates and normalises `respond({ status, headers, body })`. */
export function normalizeResponse(res: unknown): HttpResponsePayload {
  if (!isObject(res)) throw new TypeError('respond() needs an object { status, headers?, body? }');
  const status = statusOf(res.status);
  const headers = headersOf(res.headers);
  const out: HttpResponsePayload = { status, headers };
  const body = res.body;
  if (typeof body === 'string') {
    out.body = body;
    out.bodyEncoding = 'utf8';
  } else if (isBinary(body)) {
    const buf = ArrayBuffer.isView(body) ? Buffer.from(body.buffer, body.byteOffset, body.byteLength) : Buffer.from(body);
    out.body = buf.toString('base64');
    out.bodyEncoding = 'base64';
  } else if (body !== undefined && body !== null) {
    const json = typeof body === 'function' || typeof body === 'symbol' ? undefined : toJson(body, 'respond(body)');
    // JSON.stringify of a function or symbol (or a toJSON that returns undefined) is no text at all: an empty "JSON" body.
    if (json === undefined) throw new TypeError(`respond(): body must be a string, a Buffer (or other binary data), or a value sent as JSON; got ${kindOf(body)} that has no JSON text`);
    out.body = json;
    out.bodyEncoding = 'utf8';
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json; charset=utf-8';
  }
  // Bounded as answered (the content-type added above counts), so the caller can read the answer: see response-headers.ts.
  const problem = responseHeadersProblem(headers);
  if (problem) throw new RangeError(`respond(): ${problem}`);
  return out;
}

export function makeRespond(state: InvocationState, propName: string | undefined, allowed: boolean) {
  return function respond(res: unknown): void {
    ensureOpen(state, 'respond()');
    if (!allowed) {
      throw new Error(`this.${propName}.respond() requires customResponse: true on the $.interface.http prop "${propName}"`);
    }
    if (state.response || state.respondedBefore) throw new Error(`respond() was already called for this request${state.respondedBefore ? ' (by an earlier step)' : ''}`);
    const payload = normalizeResponse(res);
    state.response = payload;
    state.port?.postMessage(payload);
  };
}
