import { DesiredSourceState, fnv1a, unpackHttpEvent } from '@app/contracts';
import { replyError, RunContext, SourceExecution } from './source-execution';
import { ActorState, emptyState, RECENT_INVOCATIONS, StateConflictError, StoredState } from './actor-state';
import type { ActorDeps, InvocationDelivery } from './actor-deps';
import { EmitterClock } from './emit-ids';
import { planLifecycle } from './lifecycle';
import { TimerSpec, timerSpecOf } from './props';
import { specKey, TimerState } from '../timers/timer-slots';

type Job = { kind: 'desired'; desired: DesiredSourceState } | { kind: 'delete' } | { kind: 'invoke'; delivery: InvocationDelivery };

/**
 * One deployed source on this replica: a mailbox processed one job at a time
 * (desired-state changes and invocations, in arrival order). Its state lives
 * in KV `source-state` and every write is a compare-and-set carrying this
 * replica's fence: when another replica took the source over, the write fails
 * and the actor stops without side effects on the state.
 */
export class SourceActor {
  private readonly queue: Job[] = [];
  private draining = false;
  private stored: StoredState | null = null;
  private desired: DesiredSourceState | undefined;
  private clock = new EmitterClock();
  private loaded = false;
  private stopped = false;
  private idle: Promise<void> = Promise.resolve();
  private markIdle: () => void = () => undefined;
  private readonly now: () => number;
  private readonly execution: SourceExecution;

  constructor(
    readonly sourceId: string,
    readonly partition: number,
    private readonly fence: string,
    private readonly deps: ActorDeps,
    private readonly onGone: (actor: SourceActor, reason: 'deleted' | 'fenced') => void,
  ) {
    this.now = deps.now ?? Date.now;
    this.execution = new SourceExecution(sourceId, deps);
  }

  get depth(): number {
    return this.queue.length;
  }

  /** The last desired state this actor was given (to rebuild it after it was fenced). */
  get lastDesired(): DesiredSourceState | undefined {
    return this.desired ?? this.queued();
  }

  private queued(): DesiredSourceState | undefined {
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const job = this.queue[i];
      if (job.kind === 'desired') return job.desired;
    }
    return undefined;
  }

  setDesired(desired: DesiredSourceState): void {
    this.enqueue({ kind: 'desired', desired });
  }

  delete(): void {
    this.enqueue({ kind: 'delete' });
  }

  invoke(delivery: InvocationDelivery): void {
    if (this.stopped) return delivery.nak();
    this.enqueue({ kind: 'invoke', delivery });
  }

  /** Stops taking work; queued invocations go back to JetStream. `graceful` waits for the current job. */
  async stop(graceful: boolean): Promise<void> {
    this.halt();
    if (graceful) await this.idle;
  }

  private halt(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.deps.timers.stop(this.sourceId);
    this.deps.metrics.mailboxDepth.dec(this.queue.length);
    for (const job of this.queue.splice(0)) if (job.kind === 'invoke') job.delivery.nak();
  }

  private enqueue(job: Job): void {
    if (this.stopped) return;
    this.queue.push(job);
    this.deps.metrics.mailboxDepth.inc();
    if (!this.draining) {
      this.draining = true;
      this.idle = new Promise((r) => (this.markIdle = r));
      void this.drain();
    }
  }

  private async drain(): Promise<void> {
    try {
      while (!this.stopped && this.queue.length) {
        const job = this.queue.shift() as Job;
        this.deps.metrics.mailboxDepth.dec();
        try {
          if (!this.loaded) await this.load();
          if (job.kind === 'desired') await this.applyDesired(job.desired);
          else if (job.kind === 'delete') await this.applyDelete();
          else await this.handleInvocation(job.delivery);
        } catch (e) {
          if (job.kind === 'invoke') job.delivery.nak(1000);
          if (e instanceof StateConflictError) this.fenced();
          else this.log().error({ err: e }, 'actor job failed');
        }
      }
    } finally {
      this.draining = false;
      this.markIdle();
    }
  }

  /** Reads the state and writes this replica's fence into it, so a previous owner's late writes fail. */
  private async load(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const stored = await this.deps.store.load(this.sourceId);
      if (!stored) {
        this.stored = null;
        break;
      }
      try {
        const state = { ...stored.state, fence: this.fence };
        this.stored = { state, revision: await this.deps.store.save(this.sourceId, state, stored.revision) };
        break;
      } catch (e) {
        if (!(e instanceof StateConflictError) || attempt >= 5) throw e;
      }
    }
    this.clock = new EmitterClock(this.stored?.state.emitter, this.now);
    this.loaded = true;
  }

  private fenced(): void {
    this.log().warn('state was written by another replica: dropping the actor (fenced)');
    this.deps.metrics.fenced.inc();
    this.halt();
    this.onGone(this, 'fenced');
  }

  private state(): ActorState {
    return this.stored?.state ?? emptyState(this.fence);
  }

  private async save(state: ActorState): Promise<void> {
    if (this.stopped) throw new StateConflictError('actor stopped');
    const next = { ...state, emitter: this.clock.snapshot(), fence: this.fence };
    const revision = await this.deps.store.save(this.sourceId, next, this.stored?.revision ?? 0);
    this.stored = { state: next, revision };
  }

  private async applyDesired(desired: DesiredSourceState): Promise<void> {
    this.desired = desired;
    let state = this.state();
    let dirty = false;
    for (const hook of planLifecycle(state, desired)) {
      const flags: Partial<ActorState> =
        hook === 'deploy' ? { deployed: true } : hook === 'activate' ? { active: true } : { active: false, codeHash: desired.codeHash, configuredProps: desired.configuredProps, endpointUrl: desired.endpointUrl };
      // deactivate runs with the code and props it was activated with; deploy and activate with the new ones.
      const useOld = hook === 'deactivate' && state.codeHash !== undefined;
      const input = {
        method: hook,
        invocationId: `${this.sourceId}.r${desired.rev}.${hook}`,
        codeHash: useOld ? (state.codeHash as string) : desired.codeHash,
        configuredProps: useOld ? (state.configuredProps ?? {}) : desired.configuredProps,
        endpointUrl: useOld ? state.endpointUrl : desired.endpointUrl,
      };
      if (!(await this.deps.components.get(input.codeHash, desired.ownerId)).descriptor.hooks.includes(hook)) {
        // Nothing to run: only the flag moves (persisted with the next write).
        state = { ...state, ...flags };
        dirty = true;
        continue;
      }
      const executed = await this.execution.execute(input, this.ctx());
      this.deps.metrics.hooks.inc({ hook, outcome: executed.result.error ? 'error' : 'ok' });
      if (executed.result.error) this.log().warn({ hook, error: executed.result.error.message }, 'hook failed');
      // Persisted right after the hook: a replica taking over never runs it again.
      await this.save({ ...state, ...(await this.execution.publish(state, executed, this.ctx())), ...flags });
      state = this.state();
      dirty = false;
    }
    if (desired.rev > state.appliedRev) {
      state = { ...state, appliedRev: desired.rev, codeHash: desired.codeHash, configuredProps: desired.configuredProps, endpointUrl: desired.endpointUrl };
      dirty = true;
    }
    const timer = await this.timerOf(desired, state);
    if (timer && timer.state !== state.timer) {
      state = { ...state, timer: timer.state };
      dirty = true;
    }
    if (dirty) await this.save(state);
    if (timer) this.deps.timers.start(this.sourceId, this.partition, timer.spec, timer.state);
    else this.deps.timers.stop(this.sourceId);
  }

  /**
   * The timer an active source runs, with its slot state (kept while the
   * schedule is unchanged). Interval timers get a per-source phase so that
   * sources deployed together do not all fire in the same instant.
   */
  private async timerOf(desired: DesiredSourceState, state: ActorState): Promise<{ spec: TimerSpec; state: TimerState } | undefined> {
    if (!desired.active || !state.active || !state.codeHash) return undefined;
    const component = await this.deps.components.get(state.codeHash, desired.ownerId);
    const spec = timerSpecOf(state.configuredProps ?? {}, component.descriptor.props);
    if (!spec) return undefined;
    if (state.timer && state.timer.specKey === specKey(spec)) return { spec, state: state.timer };
    const phase = 'intervalSeconds' in spec ? fnv1a(this.sourceId) % (spec.intervalSeconds * 1000) : 0;
    return { spec, state: { anchorMs: this.now() - phase, specKey: specKey(spec) } };
  }

  private async applyDelete(): Promise<void> {
    this.deps.timers.stop(this.sourceId);
    const state = this.stored?.state;
    if (state?.active && state.codeHash) {
      const executed = await this.execution.execute({ method: 'deactivate', invocationId: `${this.sourceId}.deleted.deactivate`, codeHash: state.codeHash, configuredProps: state.configuredProps ?? {}, endpointUrl: state.endpointUrl }, this.ctx());
      this.deps.metrics.hooks.inc({ hook: 'deactivate', outcome: executed.result.error ? 'error' : 'ok' });
      await this.execution.publish(state, executed, this.ctx());
    }
    if (this.stored) await this.deps.store.remove(this.sourceId, this.stored.revision);
    this.stored = null;
    this.log().info('source deleted: state removed');
    this.halt();
    this.onGone(this, 'deleted');
  }

  private async handleInvocation(delivery: InvocationDelivery): Promise<void> {
    const { msg } = delivery;
    const state = this.state();
    const kind = msg.kind;
    const skip = (outcome: string, status?: number): void => {
      if (msg.replyTo && status) replyError(this.deps.publisher, msg.replyTo, status, outcome === 'inactive' ? 'the source is not active' : 'the invocation was already processed');
      delivery.ack();
      this.deps.metrics.invocations.inc({ outcome, kind });
    };
    if (!this.desired || !state.active || !state.codeHash) return skip('inactive', 404);
    if (state.recent.includes(msg.invocationId)) return skip('duplicate', 409);
    if (kind === 'timer' && msg.scheduledAtMs !== undefined && state.timer?.lastSlotMs !== undefined && msg.scheduledAtMs <= state.timer.lastSlotMs) return skip('duplicate');
    if (kind === 'timer' && msg.scheduledAtMs !== undefined) this.deps.metrics.timerLag.observe(Math.max(0, this.now() - msg.scheduledAtMs) / 1000);

    const executed = await this.execution.execute({
      method: 'run',
      invocationId: msg.invocationId,
      codeHash: state.codeHash,
      configuredProps: state.configuredProps ?? {},
      endpointUrl: state.endpointUrl,
      event: kind === 'http' ? unpackHttpEvent(msg.event) : msg.event,
      replyTo: msg.replyTo,
    }, this.ctx());
    if (this.stopped) return delivery.nak();
    const { result } = executed;
    const current = this.state();
    const changes = await this.execution.publish(current, executed, this.ctx());
    const timerSlot = kind === 'timer' && msg.scheduledAtMs !== undefined && current.timer ? { timer: { ...current.timer, lastSlotMs: msg.scheduledAtMs } } : {};
    if (changes.db !== current.db || changes.dedupe !== current.dedupe || timerSlot.timer) {
      const recent = [...current.recent, msg.invocationId].slice(-RECENT_INVOCATIONS);
      await this.save({ ...current, ...changes, ...timerSlot, recent });
    }
    this.deps.publisher.publishUsage({ ownerId: this.desired.ownerId, sourceId: this.sourceId, invocationId: msg.invocationId, computeMs: Math.round(result.durationMs), finishedAtMs: this.now() }, delivery.redelivered || kind === 'subscription' || kind === 'timer');
    delivery.ack();
    this.deps.metrics.invocations.inc({ outcome: result.error ? 'error' : 'ok', kind });
    if (result.error || this.deps.logger.isLevelEnabled('debug')) {
      const fields = { invocation_id: msg.invocationId, kind, duration_ms: Math.round(result.durationMs), error: result.error?.message };
      if (result.error) this.log().info(fields, 'run failed (recorded as an $errors event)');
      else this.log().debug(fields, 'run finished');
    }
  }

  private ctx(): RunContext {
    return { desired: this.desired, db: this.state().db, clock: this.clock, stopped: () => this.stopped };
  }

  private log() {
    return this.deps.logger.child({ source_id: this.sourceId, partition: this.partition });
  }
}
