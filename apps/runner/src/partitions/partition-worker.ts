import { ConsumerMessages, JsMsg, KvEntry } from 'nats';
import type { Logger } from 'pino';
import { API_ANSWER_HEADERS, decodeJson, DesiredSourceState, encodeJson, HttpResponseMessage, InvocationMessage } from '@app/contracts';
import { boundConsumer, ensureDurable, type NatsService } from '@app/nats';
import { type ActorDeps, emitGroup } from '../actors/actor-deps';
import { SourceActor } from '../actors/source-actor';
import { WorkflowActor } from '../workflows/workflow-actor';
import { NatsSendPublisher } from '../workflows/workflow-sends';
import { DEFER_MAX_MS, PartitionAdmission } from './partition-admission';
import { invocationsOf, MessageInvocations, RanBefore } from './message-invocations';
import { DesiredStateWatch } from './desired-watch';

/** Sources (`dc_…`) and workflows (`p_…`) share partitions, desired states and invocation consumers. */
type PartitionActor = SourceActor | WorkflowActor;

export interface PartitionWorkerOptions {
  ackWaitMs: number;
  maxInflight: number;
  /** How long a graceful stop waits for running invocations. */
  drainTimeoutMs: number;
  /** How long a fenced actor stays down before it is rebuilt (at least one lease round). */
  refenceDelayMs: number;
}

const nanos = (ms: number): number => ms * 1_000_000;

/** Redeliveries (and their delay) granted to an invocation whose source this partition does not know yet. */
const UNKNOWN_SOURCE_RETRIES = 5;
const UNKNOWN_SOURCE_RETRY_MS = 1000;
/**
 * JetStream's `max_ack_pending` of a partition's consumer, in multiples of what the runner holds (`maxInflight`):
 * the invocations the runner hands back for fairness (PartitionAdmission) stay pending there, and the consumer must
 * still reach the other sources' invocations behind them.
 */
const SERVER_PENDING_FACTOR = 10;

/**
 * Everything one owned partition runs: a KV watch on its desired states
 * (`<p>.*` in `sources`) driving one actor per source, and a durable pull
 * consumer on its invocations feeding the actors' mailboxes. Unacknowledged
 * invocations get `working()` heartbeats so long runs are not redelivered.
 */
export class PartitionWorker {
  private readonly actors = new Map<string, PartitionActor>();
  private readonly inflight = new Set<JsMsg>();
  private readonly admission: PartitionAdmission;
  private readonly refencing = new Set<string>();
  private readonly ranBefore: RanBefore;
  private watch: DesiredStateWatch | undefined;
  private messages: ConsumerMessages | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly log: Logger;

  constructor(
    readonly partition: number,
    private readonly fence: string,
    private readonly nats: NatsService,
    private readonly deps: ActorDeps,
    private readonly opts: PartitionWorkerOptions,
  ) {
    this.log = deps.logger.child({ partition });
    this.admission = new PartitionAdmission(opts.maxInflight, opts.ackWaitMs + 10 * DEFER_MAX_MS);
    this.ranBefore = new RanBefore(Math.max(60_000, 4 * opts.ackWaitMs));
  }

  get actorCount(): number {
    return this.actors.size;
  }

  async start(): Promise<void> {
    this.watch = new DesiredStateWatch(this.nats.sources, this.nats.names.sourceKey(this.partition, '*'), (entry) => this.onDesired(entry), this.log);
    await this.watch.start();
    if (this.stopped) return;
    const durable = `runner_p${this.partition}`;
    const stream = this.nats.names.invocationsStream;
    await ensureDurable(this.nats.jsm, stream, {
      durable_name: durable,
      filter_subject: this.nats.names.invocationsOfPartition(this.partition),
      ack_wait: nanos(this.opts.ackWaitMs),
      max_deliver: -1,
      max_ack_pending: this.opts.maxInflight * SERVER_PENDING_FACTOR,
    });
    const consumer = await boundConsumer(this.nats.js, stream, durable);
    if (this.stopped) return;
    this.messages = await consumer.consume({ max_messages: Math.min(512, this.opts.maxInflight) });
    void this.consume(this.messages);
    const beat = Math.max(500, Math.floor(this.opts.ackWaitMs / 3));
    this.heartbeat = setInterval(() => this.inflight.forEach((m) => m.working()), beat);
    this.heartbeat.unref?.();
    this.log.info({ sources: this.actors.size }, 'partition started');
  }

  /** Stops consuming; `graceful` lets running invocations finish (bounded), else drops the actors at once (lease lost). */
  async stop(graceful: boolean): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.messages?.stop();
    this.watch?.stop();
    if (this.heartbeat) clearInterval(this.heartbeat);
    const actors = [...this.actors.values()];
    this.actors.clear();
    this.deps.metrics.actors.dec(actors.length);
    const all = Promise.all(actors.map((a) => a.stop(graceful)));
    if (graceful) await Promise.race([all, new Promise((r) => setTimeout(r, this.opts.drainTimeoutMs).unref?.())]);
    for (const m of this.inflight) m.nak();
    this.inflight.clear();
    this.log.info({ graceful }, 'partition stopped');
  }

  private onDesired(entry: KvEntry): void {
    if (this.stopped) return;
    const sourceId = entry.key.slice(entry.key.indexOf('.') + 1);
    if (entry.operation !== 'PUT') return this.actor(sourceId).delete();
    let desired: DesiredSourceState;
    try {
      desired = decodeJson<DesiredSourceState>(entry.value);
    } catch (err) {
      this.log.error({ err, source_id: sourceId }, 'unreadable desired state');
      return;
    }
    this.actor(sourceId).setDesired(desired);
  }

  private actor(sourceId: string): PartitionActor {
    let a = this.actors.get(sourceId);
    if (!a) {
      const onGone = (gone: PartitionActor, reason: 'deleted' | 'fenced'): void => {
        if (this.actors.get(sourceId) !== gone) return;
        this.actors.delete(sourceId);
        this.admission.forget(sourceId);
        this.deps.metrics.actors.dec();
        if (reason === 'fenced') this.refence(sourceId, gone.lastDesired);
      };
      a = sourceId.startsWith('p_')
        ? new WorkflowActor(sourceId, this.partition, this.fence, this.deps, onGone, new NatsSendPublisher(this.nats))
        : new SourceActor(sourceId, this.partition, this.fence, this.deps, onGone);
      this.actors.set(sourceId, a);
      this.deps.metrics.actors.inc();
    }
    return a;
  }

  /**
   * Another writer fenced one of our actors. If this replica has really lost the
   * partition, its lease renewal fails within a lease round and the partition
   * stops first; if it still owns the partition (the other writer was the stale
   * one), the actor is rebuilt, writes its fence again and goes on. Meanwhile the
   * source's invocations wait in JetStream.
   */
  private refence(sourceId: string, desired: DesiredSourceState | undefined): void {
    this.refencing.add(sourceId);
    const timer = setTimeout(() => {
      this.refencing.delete(sourceId);
      if (this.stopped || this.actors.has(sourceId) || !desired) return;
      this.log.warn({ source_id: sourceId }, 'partition still owned after the source was fenced: rebuilding its actor');
      this.actor(sourceId).setDesired(desired);
    }, this.opts.refenceDelayMs);
    timer.unref?.();
  }

  private async consume(messages: ConsumerMessages): Promise<void> {
    try {
      for await (const m of messages) {
        if (this.stopped) {
          m.nak();
          continue;
        }
        this.dispatch(m);
      }
    } catch (err) {
      if (!this.stopped) this.log.error({ err }, 'invocation consumer failed');
    }
  }

  private dispatch(m: JsMsg): void {
    let invocations: InvocationMessage[] | undefined;
    try {
      invocations = invocationsOf(decodeJson<unknown>(m.data));
    } catch {
      invocations = undefined;
    }
    if (!invocations) {
      m.term(); // unreadable invocation
      return;
    }
    const { sourceId } = invocations[0];
    const actor = this.actors.get(sourceId);
    if (!actor && this.refencing.has(sourceId)) {
      m.nak(UNKNOWN_SOURCE_RETRY_MS);
      return;
    }
    if (!actor && m.info.redeliveryCount < UNKNOWN_SOURCE_RETRIES) {
      // The invocation may have overtaken the source's desired state (a request right after create): retry shortly.
      m.nak(UNKNOWN_SOURCE_RETRY_MS);
      return;
    }
    if (!actor) {
      void this.unknownSource(m, invocations);
      return;
    }
    const owner = actor.lastDesired?.ownerId ?? '';
    const admitted = this.admission.offer(sourceId, owner, m.info.streamSequence);
    if (!admitted.hold) {
      m.nak(admitted.delayMs);
      this.deps.metrics.handedBack.inc();
      return;
    }
    // Handed back by this replica without running is not a redelivery.
    const redelivered = m.info.redeliveryCount - admitted.deferrals > 1;
    // Back after this replica handed it back for another invocation in it: those that finished here do not run again.
    const pending = redelivered ? invocations.filter((inv) => !this.ranBefore.take(inv.invocationId)) : invocations;
    if (!pending.length) {
      this.admission.release(sourceId, owner);
      m.ack();
      return;
    }
    this.inflight.add(m);
    const settled = new MessageInvocations(pending, (outcome) => {
      if (this.inflight.delete(m)) this.admission.release(sourceId, owner);
      if ('ack' in outcome) return m.ack();
      this.ranBefore.add(outcome.finished);
      m.nak(outcome.nakDelayMs);
    });
    // One group per delivery of a message of several: its events go to EMITS as parts a re-run cannot store twice.
    const group = invocations.length > 1 && this.deps.config.emitBatches ? emitGroup(invocations[0].invocationId, redelivered) : undefined;
    pending.forEach((msg, i) => actor.invoke({ msg, redelivered, group, ack: () => settled.ack(i), nak: (delayMs?: number) => settled.nak(i, delayMs) }));
  }

  /**
   * An invocation of a source without an actor here after its retries. The redelivery count also grows
   * for reasons that have nothing to do with the source (naks while NATS elected a leader, a fenced
   * actor, a replica that died holding it): only the desired state tells whether the source exists.
   * While KV `sources` holds it (or cannot be read), the watch has not delivered it yet (a partition
   * just taken over, a busy replica): the invocation waits. Without it, the source is unknown or deleted.
   */
  private async unknownSource(m: JsMsg, invocations: InvocationMessage[]): Promise<void> {
    const [msg] = invocations;
    const key = this.nats.names.sourceKey(this.partition, msg.sourceId);
    const exists = await this.nats.sources.get(key).then((e) => e?.operation === 'PUT', () => true);
    if (exists && !this.stopped) {
      m.nak(UNKNOWN_SOURCE_RETRY_MS);
      return;
    }
    if (this.stopped) {
      m.nak();
      return;
    }
    // No desired state for it in this partition: unknown or deleted source.
    const res: HttpResponseMessage = { status: 404, headers: { 'content-type': 'application/json; charset=utf-8', ...API_ANSWER_HEADERS }, body: JSON.stringify({ error: `source ${msg.sourceId} not found`, code: 'not_found' }) };
    for (const { replyTo } of invocations) if (replyTo) this.nats.nc.publish(replyTo, encodeJson(res));
    m.ack();
    for (const { kind } of invocations) this.deps.metrics.invocations.inc({ outcome: 'unknown_source', kind });
  }
}
