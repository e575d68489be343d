/**
 * The sandbox's task contract: what the runner (and the api, for reading a
 * component and calling `options()`) send to a Piscina worker and get back.
 */
import type { ComponentDescriptor, PropDescriptor } from '@app/component-model';
import type { HttpResponseMessage } from '@app/contracts';

export interface DescribeTask {
  kind: 'describe';
  code: string;
  /** Base URL for relative imports of a component fetched from `component_url`. */
  baseUrl?: string;
  timeoutMs: number;
}

export type MethodName = 'run' | 'deploy' | 'activate' | 'deactivate';

export interface ExecuteTask {
  kind: 'execute';
  /** The account (user or org) that owns the source: its code runs in that account's sandbox. */
  account?: string;
  sourceId: string;
  invocationId: string;
  codeHash: string;
  code: string;
  method: MethodName;
  /** Prop values, defaults applied, secrets decrypted. */
  props: Record<string, unknown>;
  /** `$.service.db` snapshot. */
  db: Record<string, unknown>;
  event?: unknown;
  /** A workflow step: `steps` of `run({ steps, $ })` (the trigger and earlier steps); the code runs as an action whatever its `type`. */
  steps?: Record<string, unknown>;
  /** A workflow step after one that called `$.respond()`: a second call fails as it does within one step. */
  responded?: boolean;
  endpointUrl?: string;
  timeoutMs: number;
  limits: { dbMaxBytes: number; eventMaxBytes: number; emitsPerInvocation: number };
  /**
   * Exact versions to install for the component's npm imports (name → version),
   * as returned by `describe` (`dependencyVersions`). When given, every replica
   * installs the same versions; when absent, pins as written and `latest`.
   */
  dependencyVersions?: Record<string, string>;
}

/**
 * Several invocations of one source's `run`, run as one sandbox task one after
 * the other: each sees the `$.service.db` writes of the ones before it, and has
 * its own timeout, result and error (an error fails only its own invocation).
 */
export interface ExecuteBatchTask extends Omit<ExecuteTask, 'kind' | 'method' | 'invocationId' | 'event'> {
  kind: 'executeBatch';
  items: { invocationId: string; event?: unknown }[];
}

/** The results of a batch in item order, or why the batch as a whole failed (its sandbox or worker died, its code could not be prepared). */
export type ExecuteBatchOutcome = { results: ExecuteResult[] } | { failed: SandboxError };

/** The results of several batches run as one task (SandboxPool.executeBatches), each in item order, or why the task as a whole failed. */
export type ExecuteBatchesOutcome = { results: ExecuteResult[][] } | { failed: SandboxError };

export interface EmitRecord {
  event: unknown;
  meta: { id?: string | number; name?: string; summary?: string; ts?: number; [k: string]: unknown };
}

export interface LogRecord {
  ts: number;
  k: string;
  msg: string;
}

export interface ExecuteResult {
  emits: EmitRecord[];
  /** Keys set during the invocation (value `undefined` = deleted). */
  dbWrites: Record<string, unknown>;
  logs: LogRecord[];
  error?: { name: string; message: string; stack?: string };
  /** `respond()` output when it was called (also delivered early through the task's response port). */
  response?: HttpResponsePayload;
  durationMs: number;
  /** Actions: the value returned by `run` (JSON-cloned). */
  returnValue?: unknown;
  /** Actions: values set with `$.export(name, value)`. */
  exports?: Record<string, unknown>;
  /** Actions: `$.send.<kind>(payload)` calls, in order. */
  sends?: SendRecord[];
  /** Actions: set when `$.flow.exit(reason)` ended the run (not an error). */
  exit?: { reason?: string };
}

/** What `respond()` answers: the api relays it as it is (`HttpResponseMessage`). */
export type HttpResponsePayload = HttpResponseMessage;

export interface SendRecord {
  kind: 'http' | 'email' | 's3' | 'emit' | 'sse';
  payload: unknown;
}

export interface SandboxError {
  name: string;
  message: string;
  stack?: string;
  /** InstallRefusedError: when the caller's install budget has room again. */
  retryAfterSeconds?: number;
}

/** Decides, just before npm runs, whether a dependency set that is not installed yet may be (throws InstallRefusedError). */
export type InstallAdmission = (deps: Record<string, string>) => void;

/** An install the caller's `InstallAdmission` refused: nothing was installed, and the refusal is not remembered. */
export class InstallRefusedError extends Error {
  override name = 'InstallRefusedError';
  constructor(message: string, readonly retryAfterSeconds: number) {
    super(message);
  }
}

/**
 * Removes `key` from `cache` once `p` fails, if it still holds `p`: a refused install at once (it is not the work's
 * failure: the next caller asks again), any other failure after `retryMs` (so that broken work is not redone on
 * every call).
 */
export function forgetFailure<T>(cache: Map<string, Promise<T>>, key: string, p: Promise<T>, retryMs: number): void {
  p.catch((e: unknown) => {
    const forget = () => {
      if (cache.get(key) === p) cache.delete(key);
    };
    if (e instanceof InstallRefusedError) forget();
    else setTimeout(forget, retryMs).unref();
  });
}

export interface DescribeResult {
  descriptor?: ComponentDescriptor;
  error?: SandboxError;
  /**
   * The component as one CommonJS bundle (relative imports inlined, npm imports
   * left as written). Present when relative imports were fetched from `baseUrl`:
   * store it and pass it as `code` to `execute`, it needs no network.
   */
  bundle?: string;
  /** npm packages installed for the component, name → exact version. Pass them back in `ExecuteTask.dependencyVersions`. */
  dependencyVersions?: Record<string, string>;
}

export interface OptionsInput {
  /** 0-indexed page. */
  page?: number;
  prevContext?: unknown;
  /** Props configured so far (`this.<prop>` inside `options()`; app props as `{ $auth }`). */
  configuredProps?: Record<string, unknown>;
  /** For a prop that `additionalProps()` adds: the props it added last time (see `PreviousProp`). */
  previousProps?: PreviousProp[];
}

/**
 * A prop that `additionalProps()` added on the previous call, as it was stored (`configurable_props`
 * form: `name`, `type` and the JSON fields of its definition). Passed back in `previousPropDefs`.
 */
export interface PreviousProp {
  name: string;
  type: string;
  [field: string]: unknown;
}

/** What a component's `additionalProps()` returned, described like its static props (static names left out). */
export interface AdditionalPropsResult {
  props?: PropDescriptor[];
  error?: SandboxError;
}

export interface OptionsResult {
  options?: unknown[];
  context?: unknown;
  error?: SandboxError;
}

/** Fetches one module of a component from its URL: its text, or null/undefined when absent (404). Throws for other failures. */
export type FetchText = (url: string) => Promise<string | null | undefined>;

/** The subset of a pino logger the sandbox writes to. */
export interface SandboxLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

export interface SandboxPoolOptions {
  /** Worker threads (at least 1). */
  threads: number;
  /** Old-generation heap cap per worker, MB. */
  heapMb: number;
  /** Where dependency sets and bundles are cached (may be shared by replicas). */
  npmCacheDir: string;
  npmRegistry?: string;
  logger?: SandboxLogger;
  /** Fetcher for relative imports of components described with a `baseUrl` (default: `fetch` with caps). */
  fetchText?: FetchText;
  /**
   * Bound synchronous code with `vm`'s `timeout` (costs ~50 µs per call for the
   * watchdog): `'always'` (or true, the default); `'adaptive'` — only code that
   * already hung a worker (its first hang is stopped by terminating the worker at
   * the deadline, later ones by vm); `'never'` (or false) — always by terminating
   * the worker.
   */
  vmTimeout?: boolean | 'always' | 'adaptive' | 'never';
  /**
   * Tasks one worker runs at once (default 1). More lets I/O-bound components
   * (waiting on HTTP) share a worker, but a worker terminated for a hang or a
   * heap overflow then fails every task it was running, not just the culprit.
   */
  concurrentTasksPerWorker?: number;
  /** Longest `npm install` of one dependency set (default 300,000 ms). */
  installTimeoutMs?: number;
  /** Largest dependency set on disk (default: no bound). */
  installMaxBytes?: number;
}

export interface SandboxPoolStats {
  threads: number;
  queueSize: number;
  completed: number;
  utilization: number;
  /** Bundles that hung a worker and now run under vm's timeout ('adaptive' mode). */
  guardedBundles: number;
}

export interface DescribeOptions {
  /** The account whose sandbox reads the component. */
  account?: string;
  baseUrl?: string;
  timeoutMs: number;
  /** Overrides the pool's `fetchText` for this call. */
  fetchText?: FetchText;
  /** Asked before npm installs a dependency set this machine does not have yet (a set already installed, or being installed, is free). */
  admitInstall?: InstallAdmission;
  /** Cancels the read: one not started yet never starts, a running one is stopped (its worker or sandbox process ends). */
  signal?: AbortSignal;
}

export interface ExecuteOptions {
  /** Called as soon as the component calls `respond()`, before the run finishes. */
  onResponse?: (response: HttpResponsePayload) => void;
}

export interface ExecuteBatchOptions {
  /** Called as soon as the invocation at `index` calls `respond()`. */
  onResponse?: (index: number, response: HttpResponsePayload) => void;
}

export interface ExecuteBatchesOptions {
  /** Called as soon as the invocation at `index` of batch `batch` calls `respond()`. */
  onResponse?: (batch: number, index: number, response: HttpResponsePayload) => void;
}
