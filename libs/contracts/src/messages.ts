/** Payloads carried over JetStream between the apps. */

/** KV `sources`, key `<partition>.<sourceId>`: what the api wants the runner to run. */
export interface DesiredSourceState {
  sourceId: string;
  /** `u_…` or `o_…`: the namespace that owns the source. */
  ownerId: string;
  /** The user who created the source. */
  userId: string;
  /** Moves on every change; the runner applies each revision once. */
  rev: number;
  active: boolean;
  componentId: string;
  /** Key of the component code in the `components` object store (SHA-256 hex). */
  codeHash: string;
  /** Values per prop; secret values and `$auth` stay encrypted (`{ "$enc": "…" }`). */
  configuredProps: Record<string, unknown>;
  endpointKey?: string;
  endpointUrl?: string;
  runTimeoutMs: number;
  updatedAtMs: number;
  /** A `$.interface.timer` prop that `additionalProps()` added (the component declares none): the source's schedule. */
  timerProp?: string;
  /** npm versions resolved when the component was saved (name → exact version), so every replica installs the same ones. */
  dependencyVersions?: Record<string, string>;
}

export type InvocationKind = 'http' | 'timer' | 'manual' | 'subscription' | 'apphook';

/** Stream INVOCATIONS, subject `inv.<partition>.<sourceId>`. */
export interface InvocationMessage {
  invocationId: string;
  sourceId: string;
  kind: InvocationKind;
  /** The event passed to `run`. */
  event: unknown;
  /** customResponse HTTP sources: the subject the api waits on for `respond()`. */
  replyTo?: string;
  createdAtMs: number;
  /** Timer invocations: the slot (ms) this run belongs to; a slot runs at most once. */
  scheduledAtMs?: number;
  /** For `subscription` invocations: where the event came from. */
  origin?: { emitterId: string; eventId: string; name: string };
  /** Where the run stands in a chain of subscriptions (omitted: a run started from outside, the root of its own chain). */
  chain?: Chain;
}

/**
 * A chain of subscriptions: the invocation started from outside (an HTTP request, a timer slot, a manual run, a
 * hook) that it began with, and how many subscriptions in a row lead from there. Its runs' events carry it on.
 */
export interface Chain {
  root: string;
  depth: number;
  /** Set by the router on a listener's first invocation past SUBSCRIPTION_CHAIN_MAX_RUNS: not run, recorded. */
  overRuns?: boolean;
}

/** Stream EMITS, subject `emit.<emitterId>`. One message per emitted event (also `$logs` and `$errors`). */
export interface EmittedEvent {
  /** `<epoch_ms>-<sequence>`, strictly increasing per emitter. */
  id: string;
  emitterId: string;
  ownerId: string;
  /** Channel: `""` default, a custom name, `$errors` or `$logs`. */
  name: string;
  event: unknown;
  summary?: string;
  /** Unique id of this emit, also the `Nats-Msg-Id`. */
  emitId: string;
  /** The event's own timestamp (ms). */
  ts: number;
  /** When the runner published it (ms). */
  emittedAtMs: number;
  /** Extra `$emit` metadata the component passed (e.g. `delivery_ts`), and the dedupe id. */
  meta?: Record<string, unknown>;
  /** The chain of the invocation whose run emitted it (`root` and `depth`). */
  chain?: Chain;
}

/** The chain an invocation's run belongs to: its own, or a new one rooted at it. */
export const chainOf = (invocationId: string, chain: Chain | undefined): Chain => (chain ? { root: chain.root, depth: chain.depth } : { root: invocationId, depth: 0 });

/**
 * Why an invocation is not run: past SUBSCRIPTION_MAX_DEPTH (a loop), or the router's first past
 * SUBSCRIPTION_CHAIN_MAX_RUNS for its listener (a chain that multiplies). Its listener records this as an
 * `$errors` event; the router gives that event to no source or workflow once the chain is past either bound.
 */
export function chainRefusal(chain: Chain | undefined, limits: { maxDepth: number; maxRuns: number }): { name: string; message: string } | undefined {
  if (!chain) return undefined;
  if (chain.depth > limits.maxDepth) {
    return {
      name: 'SubscriptionDepthError',
      message: `not run: this event came through ${chain.depth} subscriptions in a row, more than SUBSCRIPTION_MAX_DEPTH (${limits.maxDepth}); do the subscriptions make a loop?`,
    };
  }
  if (chain.overRuns) {
    return {
      name: 'SubscriptionChainError',
      message: `not run: the event that started this chain of subscriptions (${chain.root}) has led to more than SUBSCRIPTION_CHAIN_MAX_RUNS (${limits.maxRuns}) runs through subscriptions of subscriptions; its further events go to no source or workflow`,
    };
  }
  return undefined;
}

/**
 * Headers of every answer the platform gives itself, at `/v1` and at the HTTP interface of sources (never on an answer a
 * component gave with `respond()`): no browser, proxy or CDN keeps it, and no browser guesses its type.
 */
export const API_ANSWER_HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' } as const;

/** Reply to a customResponse HTTP request. */
export interface HttpResponseMessage {
  status: number;
  /** Header values; `set-cookie` may be a list (one header line per cookie). */
  headers?: Record<string, string | string[]>;
  /** Body text, or base64 when `bodyEncoding` is `base64`. */
  body?: string;
  bodyEncoding?: 'utf8' | 'base64';
}

/** Stream DELIVERIES, subject `dlv.<webhookId>`: one event for one webhook. */
export interface DeliveryMessage {
  webhookId: string;
  subscriptionId: string;
  event: EmittedEvent;
  /** The number of the attempt this message is for: absent (1) from the router, 2+ when the retry queue republishes it. */
  attempt?: number;
  /** Times the sender handed the message back unattempted (its account held WEBHOOK_HELD_PER_ACCOUNT or its share, or its slow webhook had too many waiting): each republish is a new message, and it may have been attempted before. */
  heldBack?: number;
}

/**
 * Core NATS `changed.subscriptions` / `changed.webhooks` / `changed.sources`: which routes the delivery apps read
 * again. No payload (or one they cannot read): anything may have changed, and every route is read again.
 */
export interface RoutesChanged {
  /** Subscriptions of these emitters were added or removed (a glob such as `dc_*` is its owner's). */
  emitters?: { emitter_id: string; owner_id: string }[];
  /** These listeners changed or went (a webhook's URL, secret or state; a deleted source or workflow): their routes, and the webhook itself. */
  listeners?: string[];
}

/** Core NATS `ctl.delete-events`: delete a source's events asynchronously. */
export interface DeleteEventsMessage {
  emitterId: string;
  startId?: string;
  endId?: string;
}

/**
 * Core NATS `ctl.restart-sandboxes`, published by every api replica that hears an access change (a member removed,
 * keys revoked or rotated): each runner stops these accounts' sandbox processes. `id` is the change's own, the same from every replica: a
 * runner acts once. With `retire`, published once by the api replica that deleted a source or workflow of the account:
 * each runner retires the account's sandbox processes instead (no new task; stopped once their runs in flight are done).
 */
export interface RestartSandboxes {
  id: string;
  accounts: string[];
  retire?: boolean;
}

/** A `ctl.restart-sandboxes` message as heard: its accounts that are strings; undefined when it is not one. */
export function readRestartSandboxes(data: Uint8Array): RestartSandboxes | undefined {
  let change: RestartSandboxes;
  try {
    change = decodeJson<RestartSandboxes>(data);
  } catch {
    return undefined;
  }
  if (typeof change?.id !== 'string' || !Array.isArray(change.accounts)) return undefined;
  return { id: change.id, accounts: change.accounts.filter((a): a is string => typeof a === 'string'), retire: change.retire === true };
}

/**
 * One `EMITS` message holding the events of several invocations: the requests the api stored together in one
 * `INVOCATIONS` message, run in one sandbox task (docs/architecture.md, "Events stored together"). Its
 * `Nats-Msg-Id` is `<the INVOCATIONS message's first invocation id>:p<part>`; `invocations` names the invocations
 * whose events are all in it, `separate` those of the same task whose events went one per message (too large
 * together). Any other `EMITS` message is one `EmittedEvent`.
 */
export interface EmitBatch {
  invocations: string[];
  separate?: string[];
  events: EmittedEvent[];
}

/** Header of an `EMITS` message republished by a range delete after the router had routed it: not routed again. */
export const EMITS_ROUTED_HEADER = 'Ess-Routed';

export const isEmitBatch = (decoded: unknown): decoded is EmitBatch =>
  typeof decoded === 'object' && decoded !== null && Array.isArray((decoded as EmitBatch).events) && Array.isArray((decoded as EmitBatch).invocations);

/** The events of one decoded `EMITS` message: a batch's, or the one event it is. */
export const emitsOf = (decoded: unknown): EmittedEvent[] => (isEmitBatch(decoded) ? decoded.events : [decoded as EmittedEvent]);

/** The events of one `EMITS` message as stored; undefined when it is not JSON. */
export function readEmits(data: Uint8Array): EmittedEvent[] | undefined {
  try {
    return emitsOf(decodeJson<unknown>(data));
  } catch {
    return undefined;
  }
}

export function encodeJson(value: unknown): Uint8Array {
  return Buffer.from(JSON.stringify(value));
}

export function decodeJson<T>(data: Uint8Array): T {
  return JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8')) as T;
}

/**
 * Stream USAGE, subject `usage.<ownerId>`: finished invocations of one owner on
 * one UTC day, counted into `usage_daily`. A runner sums its invocations over a
 * short window into one record (`invocations` of them, 1 when absent).
 */
export interface UsageRecord {
  ownerId: string;
  /** The (last) source and invocation counted. */
  sourceId: string;
  invocationId: string;
  /** Summed over the invocations counted. */
  computeMs: number;
  finishedAtMs: number;
  /** How many invocations the record counts (1 when absent). */
  invocations?: number;
}
