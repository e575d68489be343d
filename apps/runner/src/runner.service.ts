import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { APP_CONFIG, AppConfig, createLogger, Logger } from '@app/config';
import { NatsService } from '@app/nats';
import type { ActorDeps } from './actors/actor-deps';
import { KvActorStateStore } from './actors/actor-state';
import { ComponentCache, ObjectStoreCodeSource } from './actors/code-cache';
import { EXECUTOR, Executor } from './executor/executor.port';
import { JetStreamPublisher } from './ops/jetstream-publisher';
import { EMIT_BUDGETS, type EmitBudgets } from './ops/emit-budget';
import { RunnerMetrics } from './ops/runner-metrics';
import { SandboxRestarts } from './ops/sandbox-restarts';
import { PartitionLeases } from './partitions/partition-leases';
import { PartitionWorker } from './partitions/partition-worker';
import { TimerService } from './timers/timer.service';
import { HeldBudget } from './workflows/held-budget';
import { ACCOUNT_HELD_MAX_EVENTS } from './workflows/workflow-run';

/**
 * The runner replica: holds partition leases and runs a `PartitionWorker`
 * (desired-state watch, invocation consumer, actors) for each owned partition.
 * On shutdown it stops consuming, lets running invocations finish, hands its
 * leases back and closes the sandbox pool.
 */
/** Room for an emitted event's envelope (ids, names, summary) in its NATS message. */
const EVENT_ENVELOPE_BYTES = 64 * 1024;

@Injectable()
export class RunnerService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly replicaId: string;
  private readonly logger: Logger;
  private readonly metrics: RunnerMetrics;
  private readonly workers = new Map<number, PartitionWorker>();
  private leases: PartitionLeases | undefined;
  private timers: TimerService | undefined;
  private deps: ActorDeps | undefined;
  private publisher: JetStreamPublisher | undefined;
  private restarts: SandboxRestarts | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly nats: NatsService,
    @Inject(EXECUTOR) private readonly executor: Executor,
    @Inject(EMIT_BUDGETS) private readonly budgets: EmitBudgets,
    registry: Registry,
  ) {
    this.replicaId = (config.runnerReplicaId || `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`).replace(/[^A-Za-z0-9_=-]/g, '-');
    this.logger = createLogger('runner', config.logLevel).child({ replica: this.replicaId });
    this.metrics = new RunnerMetrics(registry, () => this.executor.stats?.());
  }

  async onApplicationBootstrap(): Promise<void> {
    const maxPayload = this.nats.maxPayload;
    this.restarts = new SandboxRestarts(this.nats, this.executor, this.metrics, this.logger);
    this.timers = new TimerService(this.nats, this.metrics, this.logger, this.config.maxRunTimeoutMs);
    this.deps = {
      executor: this.executor,
      components: new ComponentCache(new ObjectStoreCodeSource(this.nats.components), this.executor, (outcome) => this.metrics.installs.inc({ outcome })),
      store: new KvActorStateStore(this.nats.sourceState),
      publisher: (this.publisher = new JetStreamPublisher(this.nats, this.logger, this.budgets, this.metrics)),
      timers: this.timers,
      metrics: this.metrics,
      logger: this.logger,
      // The actor state (db included) and each emitted event are one NATS message: they must fit the server's max_payload.
      config: { ...this.config, stateMaxBytes: maxPayload - 1024, eventMaxBytes: this.eventCapBytes(maxPayload) },
      held: new HeldBudget(ACCOUNT_HELD_MAX_EVENTS * this.eventCapBytes(maxPayload)),
    };
    this.leases = new PartitionLeases(
      this.nats.leases,
      { partitions: this.config.partitions, ttlMs: this.config.leaseTtlMs, replicaId: this.replicaId, names: this.nats.names, workConnected: () => this.nats.waitConnected() },
      {
        acquired: (p, fence) => this.startPartition(p, fence),
        lost: (p) => this.stopPartition(p, false),
        releasing: (p) => this.stopPartition(p, true),
      },
      this.logger,
    );
    await this.leases.start();
    this.logger.info({ partitions: this.leases.ownedPartitions }, 'runner ready');
  }

  /**
   * EVENT_MAX_BYTES, lowered to what one NATS message carries beside the event's envelope
   * (an event that passes the sandbox's check but not the server's payload limit could never be published).
   */
  private eventCapBytes(maxPayload: number): number {
    const fits = maxPayload - EVENT_ENVELOPE_BYTES;
    if (this.config.eventMaxBytes <= fits) return this.config.eventMaxBytes;
    this.logger.warn({ event_max_bytes: this.config.eventMaxBytes, max_payload: maxPayload, effective: fits }, `EVENT_MAX_BYTES is above what the NATS server's max_payload carries: events are capped at ${fits} bytes (raise max_payload in the NATS server for more)`);
    return fits;
  }

  /** The start line's word on how component code is isolated. */
  get isolationSummary(): string {
    return this.executor.isolation?.summary ?? 'none';
  }

  /** Health details for `/healthz`. */
  health(): Record<string, unknown> {
    let actors = 0;
    for (const w of this.workers.values()) actors += w.actorCount;
    return { replica: this.replicaId, partitions: this.leases?.ownedPartitions ?? [], replicas: this.leases?.liveReplicas ?? 0, actors, isolation: this.executor.isolation?.mode ?? 'none' };
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.logger.info('runner shutting down: releasing partitions');
    await this.leases?.close();
    for (const p of [...this.workers.keys()]) await this.stopPartition(p, true);
    this.timers?.close();
    this.restarts?.close();
    this.publisher?.close();
    await this.executor.close();
  }

  private async startPartition(p: number, fence: string): Promise<void> {
    if (!this.deps) return;
    await this.workers.get(p)?.stop(false);
    const worker = new PartitionWorker(p, fence, this.nats, this.deps, {
      ackWaitMs: this.config.invocationAckWaitMs,
      maxInflight: this.config.runnerMaxInflightPerPartition,
      drainTimeoutMs: Math.max(500, Math.floor(this.config.leaseTtlMs / 3)),
      refenceDelayMs: this.config.leaseTtlMs,
    });
    this.workers.set(p, worker);
    this.metrics.partitionsOwned.set(this.workers.size);
    try {
      await worker.start();
    } catch (e) {
      await this.stopPartition(p, false);
      throw e;
    }
  }

  private async stopPartition(p: number, graceful: boolean): Promise<void> {
    const worker = this.workers.get(p);
    if (!worker) return;
    this.workers.delete(p);
    this.metrics.partitionsOwned.set(this.workers.size);
    await worker.stop(graceful);
  }
}
