import type { Logger } from 'pino';
import type { AppConfig } from '@app/config';
import type { EmittedEvent, HttpResponseMessage, InvocationMessage, UsageRecord } from '@app/contracts';
import type { Executor } from '../executor/executor.port';
import type { RunnerMetrics } from '../ops/runner-metrics';
import type { TimerSpec } from './props';
import type { TimerState } from '../timers/timer-slots';
import type { ActorStateStore } from './actor-state';
import type { ComponentCache } from './code-cache';
import type { HeldBudget } from '../workflows/held-budget';

/** Side effects of an invocation on JetStream (fakes in unit tests). */
export interface Publisher {
  /** Publishes in order, each with its `Nats-Msg-Id` = `emitId`; resolves when all are stored. */
  publishEvents(events: EmittedEvent[]): Promise<void>;
  /** Publishes units in order: loose events one per message, a group's runs as `EmitBatch` messages; resolves when all are stored. */
  publishUnits(units: EmitUnit[]): Promise<void>;
  /**
   * Waits, as events do, for the budgets of what each account publishes (EMITS_PER_SECOND_PER_ACCOUNT,
   * EMITS_BYTES_PER_SECOND_PER_ACCOUNT) to take these messages: what is published but not stored (`$.send.sse`).
   */
  withinBudgets(messages: readonly { owner: string; bytes: number }[]): Promise<void>;
  /**
   * Counts a finished invocation. `exact`: one that may have been counted
   * already (a redelivery, or an invocation id that can arrive twice: routed
   * events, timer slots) goes out at once as its own record, deduplicated by
   * its invocation id; others may be summed with more before publishing.
   */
  publishUsage(usage: UsageRecord, exact?: boolean): void;
  /** Answers an HTTP caller; `of` names what answered in the error a response too large for one message gets. */
  reply(subject: string, response: HttpResponseMessage, of?: 'source' | 'workflow'): void;
}

/** The replica's timer scheduler as an actor sees it. */
export interface TimerPort {
  start(sourceId: string, partition: number, spec: TimerSpec, state: TimerState): void;
  stop(sourceId: string): void;
  /** The run of the source's timer slot `slotMs` was processed. */
  processed(sourceId: string, slotMs: number): void;
}

/**
 * The invocations of one `INVOCATIONS` message of several (the requests the api stored together): their events are
 * stored as `EmitBatch` messages with `Nats-Msg-Id` `<id>:p<part>`, so that a run again of the message (a crash
 * before its acknowledgement, some of its invocations handed back) stores none of them twice.
 */
export interface EmitGroup {
  /** The message's first invocation id (the api's `Nats-Msg-Id` of the message). */
  readonly id: string;
  /** The message came back: an earlier delivery may have stored some of its parts. */
  readonly redelivered: boolean;
  /** The next part number this delivery of the message publishes. */
  nextPart: number;
  /** Invocations whose events are known to be stored in a part (read back from a duplicate part). */
  readonly stored: Set<string>;
  /** Invocations a stored part lists as published one event per message. */
  readonly separate: Set<string>;
}

/** What one run of a grouped invocation emitted. */
export interface GroupRun {
  invocationId: string;
  events: EmittedEvent[];
}

/** Events to publish, in order: loose ones each as its own message, or the runs of one group. */
export type EmitUnit = { events: EmittedEvent[] } | { group: EmitGroup; runs: GroupRun[] };

export const emitGroup = (id: string, redelivered: boolean): EmitGroup => ({ id, redelivered, nextPart: 0, stored: new Set(), separate: new Set() });

/** One invocation as received from the partition's consumer. */
export interface InvocationDelivery {
  msg: InvocationMessage;
  redelivered: boolean;
  /** Set when the invocation came in a message of several (and EMIT_BATCHES is on). */
  group?: EmitGroup;
  ack(): void;
  /** Hands the invocation back for redelivery (to this or another replica). */
  nak(delayMs?: number): void;
}

export type ActorConfig = Pick<AppConfig, 'secretsKey' | 'runTimeoutMs' | 'maxRunTimeoutMs' | 'dbMaxBytes' | 'eventMaxBytes' | 'emitsPerInvocation' | 'subscriptionMaxDepth' | 'subscriptionChainMaxRuns'> & {
  /** The invocations of a message of several store their events as `EmitBatch` parts (EMIT_BATCHES, on by default in the app; off when absent here). */
  emitBatches?: boolean;
  /** Invocations waiting in a source's mailbox run as one sandbox task, up to this many (1: one at a time; default 1). */
  runBatchMaxInvocations?: number;
  /** Largest actor state one KV write can carry (the NATS server's max_payload less headers); undefined = no such bound. */
  stateMaxBytes?: number;
};

export interface ActorDeps {
  executor: Pick<Executor, 'execute' | 'executeBatch' | 'retireSandboxes'>;
  components: ComponentCache;
  store: ActorStateStore;
  publisher: Publisher;
  timers: TimerPort;
  metrics: RunnerMetrics;
  logger: Logger;
  config: ActorConfig;
  /** What each account's workflow runs in progress hold in this runner's memory (none: no bound). */
  held?: HeldBudget;
  now?: () => number;
}
