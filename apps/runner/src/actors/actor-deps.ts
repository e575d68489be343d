import type { Logger } from 'pino';
import type { AppConfig } from '@app/config';
import type { EmittedEvent, HttpResponseMessage, InvocationMessage, UsageRecord } from '@app/contracts';
import type { Executor } from '../executor/executor.port';
import type { RunnerMetrics } from '../ops/runner-metrics';
import type { TimerSpec } from './props';
import type { TimerState } from '../timers/timer-slots';
import type { ActorStateStore } from './actor-state';
import type { ComponentCache } from './code-cache';

/** Side effects of an invocation on JetStream (fakes in unit tests). */
export interface Publisher {
  /** Publishes in order, each with its `Nats-Msg-Id` = `emitId`; resolves when all are stored. */
  publishEvents(events: EmittedEvent[]): Promise<void>;
  /**
   * Counts a finished invocation. `exact`: one that may have been counted
   * already (a redelivery, or an invocation id that can arrive twice: routed
   * events, timer slots) goes out at once as its own record, deduplicated by
   * its invocation id; others may be summed with more before publishing.
   */
  publishUsage(usage: UsageRecord, exact?: boolean): void;
  reply(subject: string, response: HttpResponseMessage): void;
}

/** The replica's timer scheduler as an actor sees it. */
export interface TimerPort {
  start(sourceId: string, partition: number, spec: TimerSpec, state: TimerState): void;
  stop(sourceId: string): void;
}

/** One invocation as received from the partition's consumer. */
export interface InvocationDelivery {
  msg: InvocationMessage;
  redelivered: boolean;
  ack(): void;
  /** Hands the invocation back for redelivery (to this or another replica). */
  nak(delayMs?: number): void;
}

export type ActorConfig = Pick<AppConfig, 'secretsKey' | 'runTimeoutMs' | 'maxRunTimeoutMs' | 'dbMaxBytes' | 'eventMaxBytes' | 'emitsPerInvocation' | 'subscriptionMaxDepth' | 'subscriptionChainMaxRuns'> & {
  /** Invocations waiting in a source's mailbox run as one sandbox task, up to this many (1: one at a time; default 1). */
  runBatchMaxInvocations?: number;
  /** Largest actor state one KV write can carry (the NATS server's max_payload less headers); undefined = no such bound. */
  stateMaxBytes?: number;
};

export interface ActorDeps {
  executor: Pick<Executor, 'execute' | 'executeBatch'>;
  components: ComponentCache;
  store: ActorStateStore;
  publisher: Publisher;
  timers: TimerPort;
  metrics: RunnerMetrics;
  logger: Logger;
  config: ActorConfig;
  now?: () => number;
}
