import { chainRefusal, DesiredSourceState, unpackHttpEvent } from '@app/contracts';
import { addEmits, Executed, RunContext, RunInput, SourceExecution } from './source-execution';
import { ActorState, emptyState, loadWithFence, RECENT_INVOCATIONS, StateConflictError, StoredState, withWrites } from './actor-state';
import type { ActorDeps, EmitUnit, InvocationDelivery } from './actor-deps';
import { EmitterClock } from './emit-ids';
import { admit, finished, OutcomeContext } from './invocation-outcomes';
import { SettledDelivery, settleOnce } from './settled-delivery';
import { HookSideLane } from './hook-side-lane';
import { planLifecycle, timerFor } from './lifecycle';

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
  /** The newest desired state given, applied or not (what a rebuilt actor starts from). */
  private given: DesiredSourceState | undefined;
  private clock = new EmitterClock();
  private loaded = false;
  private stopped = false;
  private idle: Promise<void> = Promise.resolve();
  private markIdle: () => void = () => undefined;
  private readonly now: () => number;
  private readonly execution: SourceExecution;
  /** HTTP requests served while a deploy or activate hook runs. */
  private readonly besideHook = new HookSideLane((delivery, hook) => this.runBesideHook(delivery, hook));

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

  /**
   * The last desired state this actor was given, to rebuild it after it was fenced: also one it had not applied
   * yet (fenced while loading its state), else the source would stay without an actor on this replica.
   */
  get lastDesired(): DesiredSourceState | undefined {
    return this.given;
  }

  setDesired(desired: DesiredSourceState): void {
    if (this.stopped) return;
    this.given = desired;
    this.enqueue({ kind: 'desired', desired });
  }

  /**
   * The deletion goes next, before what waits in the mailbox: those invocations are handed back (the api purged
   * them from JetStream; a redelivered one finds no source and is answered 404) instead of running the deleted
   * source's code first. A source could hold a quarter of its partition's messages here: runs of 16 MB of logs
   * each went on for minutes after the deletion, their events stored for a source no longer listed, and every
   * other account's events waited behind them in delivery.
   */
  delete(): void {
    if (this.stopped) return;
    this.handBackWaiting();
    this.enqueue({ kind: 'delete' });
  }

  /**
   * Queues an invocation. An HTTP request that arrives while the source's
   * deploy or activate hook runs does not wait for it: it runs beside the hook
   * (one at a time with other such requests, in order), so a hook can call its
   * own endpoint — the handshake of many webhook registrations — and get the
   * answer of `run`.
   */
  invoke(delivery: InvocationDelivery): void {
    if (this.stopped) return delivery.nak();
    if (this.besideHook.offer(delivery)) return;
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
    this.handBackWaiting();
  }

  /** Hands back every invocation not yet run (the mailbox's, and those waiting beside a hook); other jobs are dropped. */
  private handBackWaiting(): void {
    this.deps.metrics.mailboxDepth.dec(this.queue.length);
    for (const job of this.queue.splice(0)) if (job.kind === 'invoke') job.delivery.nak();
    for (const d of this.besideHook.takeAll()) d.nak();
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
        const batch = job.kind === 'invoke' ? [job.delivery, ...this.takeInvocations(job.delivery)].map(settleOnce) : [];
        try {
          if (!this.loaded) await this.load();
          if (job.kind === 'desired') await this.applyDesired(job.desired);
          else if (job.kind === 'delete') await this.applyDelete();
          else await this.handleInvocations(batch);
        } catch (e) {
          for (const d of batch) if (!d.settled) d.nak(1000);
          if (e instanceof StateConflictError) this.fenced();
          else {
            this.log().error({ err: e }, 'actor job failed');
            // A desired state not applied (NATS unavailable for a moment) is applied again, unless a newer one came;
            // a deletion likewise (its deactivate hook has not run, its state is still there).
            if (job.kind !== 'invoke') this.retryJob(job);
          }
        }
      }
    } finally {
      this.draining = false;
      this.markIdle();
    }
  }

  /**
   * The invocations right behind `first` in the mailbox that run with it as one
   * sandbox task (micro-batching): up to RUN_BATCH_MAX_INVOCATIONS, never past a
   * desired-state change, never timer slots (each moves the timer's state).
   */
  private takeInvocations(first: InvocationDelivery): InvocationDelivery[] {
    const max = (this.deps.config.runBatchMaxInvocations ?? 1) - 1;
    const taken: InvocationDelivery[] = [];
    if (first.msg.kind === 'timer') return taken;
    while (taken.length < max) {
      const next = this.queue[0];
      if (next?.kind !== 'invoke' || next.delivery.msg.kind === 'timer') break;
      this.queue.shift();
      this.deps.metrics.mailboxDepth.dec();
      taken.push(next.delivery);
    }
    return taken;
  }

  /** Reads the state and writes this replica's fence into it, so a previous owner's late writes fail. */
  private async load(): Promise<void> {
    this.stored = await loadWithFence(this.deps.store, this.sourceId, () => this.stopped, (found) => (found ? { ...found, fence: this.fence } : null));
    this.clock = new EmitterClock(this.stored?.state.emitter, this.now);
    this.loaded = true;
  }

  private retryJob(job: Job): void {
    const timer = setTimeout(() => {
      if (!this.stopped && !this.queue.some((j) => j.kind !== 'invoke')) this.enqueue(job);
    }, 1000);
    timer.unref?.();
  }

  private fenced(): void {
    if (this.stopped) return;
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
      const executed = await this.runHook(input, hook === 'deploy' || hook === 'activate');
      this.deps.metrics.hooks.inc({ hook, outcome: executed.result.error ? 'error' : 'ok' });
      if (executed.result.error) this.log().warn({ hook, error: executed.result.error.message }, 'hook failed');
      // Requests served beside the hook ran after it began: the hook's writes apply first, theirs on top.
      const now = this.state();
      state = { ...state, db: now.db, dedupe: now.dedupe, recent: now.recent };
      const changes = await this.execution.publish(state, executed, this.ctx());
      // Persisted right after the hook: a replica taking over never runs it again.
      await this.save({ ...state, ...changes, db: withWrites(changes.db, this.besideHook.writes), ...flags });
      state = this.state();
      dirty = false;
    }
    if (desired.rev > state.appliedRev) {
      state = { ...state, appliedRev: desired.rev, codeHash: desired.codeHash, configuredProps: desired.configuredProps, endpointUrl: desired.endpointUrl };
      dirty = true;
    }
    const timer = await timerFor(this.sourceId, desired, state, this.deps.components, this.now);
    if (timer && timer.state !== state.timer) {
      state = { ...state, timer: timer.state };
      dirty = true;
    }
    if (dirty) await this.save(state);
    if (timer) this.deps.timers.start(this.sourceId, this.partition, timer.spec, timer.state);
    else this.deps.timers.stop(this.sourceId);
  }

  /** Runs a hook; with `serveHttp`, HTTP requests arriving meanwhile run beside it, and all of them have finished when this returns. */
  private async runHook(input: RunInput, serveHttp: boolean): Promise<Executed> {
    if (!serveHttp) return this.execution.execute(input, this.ctx());
    return this.besideHook.during(input, () => this.execution.execute(input, this.ctx()));
  }


  /** One HTTP request served while a hook runs: run with the hook's code and props, its events published, its db writes saved. */
  private async runBesideHook(delivery: SettledDelivery, hook: RunInput): Promise<void> {
    const { msg } = delivery;
    try {
      if (this.state().recent.includes(msg.invocationId)) {
        admit(this.outcomes(), delivery, this.state(), new Set([msg.invocationId]));
        return;
      }
      const ctx = this.ctx();
      const input: RunInput = { ...hook, method: 'run', invocationId: msg.invocationId, event: unpackHttpEvent(msg.event), replyTo: msg.replyTo };
      const executed = await this.execution.execute(input, ctx);
      if (this.stopped) return delivery.nak();
      const now = this.state();
      const out = this.execution.outputs(now, executed, ctx);
      const units: EmitUnit[] = [];
      addEmits(units, delivery.group, msg.invocationId, out.events);
      await this.execution.publishUnits(units);
      if (out.db !== now.db) this.besideHook.gather(executed.result.dbWrites);
      if (out.db !== now.db || out.dedupe !== now.dedupe) await this.save({ ...now, db: out.db, dedupe: out.dedupe, recent: [...now.recent, msg.invocationId].slice(-RECENT_INVOCATIONS) });
      finished(this.outcomes(), delivery, executed.result);
    } catch (e) {
      delivery.nak(1000);
      this.log().warn({ err: e, invocation_id: msg.invocationId }, 'a request served beside a hook failed; it will be retried');
    }
  }

  private async applyDelete(): Promise<void> {
    this.deps.timers.stop(this.sourceId);
    const state = this.stored?.state;
    if (state?.active && state.codeHash) {
      const executed = await this.execution.execute({ method: 'deactivate', invocationId: `${this.sourceId}.deleted.deactivate`, codeHash: state.codeHash, configuredProps: state.configuredProps ?? {}, endpointUrl: state.endpointUrl }, this.ctx());
      this.deps.metrics.hooks.inc({ hook: 'deactivate', outcome: executed.result.error ? 'error' : 'ok' });
      await this.execution.publish(state, executed, this.ctx());
      // Not again when removing the state fails and the deletion is tried again.
      if (this.stored) this.stored = { ...this.stored, state: { ...this.stored.state, active: false } };
      // The hook ran the deleted code in the account's sandbox process, most likely after the api's retirement reached
      // this replica (ctl.restart-sandboxes): what it left behind there stops too.
      const owner = this.desired?.ownerId;
      if (owner) this.deps.metrics.sandboxRetirements.inc(this.deps.executor.retireSandboxes?.([owner]) ?? 0);
    }
    if (this.stored) await this.deps.store.remove(this.sourceId, this.stored.revision);
    this.stored = null;
    this.log().info('source deleted: state removed');
    this.halt();
    this.onGone(this, 'deleted');
  }

  /**
   * Runs invocations in mailbox order: several as one sandbox task when the
   * executor can batch, each with its own result, events, usage and ack; the
   * state (db, dedupe cache, timer slot) is written once for all of them, and
   * their events are published together, before any is acknowledged.
   */
  private async handleInvocations(deliveries: SettledDelivery[]): Promise<void> {
    const state = this.state();
    const seen = new Set(state.recent);
    const outcomes = this.outcomes();
    const admitted = deliveries.filter((d) => admit(outcomes, d, state, seen));
    const ctx = this.ctx();
    const input = ({ msg }: SettledDelivery): RunInput => ({
      method: 'run',
      invocationId: msg.invocationId,
      codeHash: state.codeHash as string,
      configuredProps: state.configuredProps ?? {},
      endpointUrl: state.endpointUrl,
      event: msg.kind === 'http' ? unpackHttpEvent(msg.event) : msg.event,
      replyTo: msg.replyTo,
      chain: msg.chain,
    });
    const runnable = await this.refuseChained(admitted, input, ctx);
    if (!runnable.length) return;
    const inputs = runnable.map(input);
    let executed: Executed[] | undefined;
    if (inputs.length > 1) {
      executed = await this.execution.executeBatch(inputs, ctx);
      if (!executed) {
        // The batch failed as a whole (its sandbox died): one at a time, so only the culprit fails.
        for (const d of runnable) if (!this.stopped) await this.handleInvocations([d]);
        for (const d of runnable) if (!d.settled) d.nak();
        return;
      }
    } else executed = [await this.execution.execute(inputs[0], ctx)];
    this.deps.metrics.runBatchSize.observe(executed.length);
    if (this.stopped) return runnable.forEach((d) => d.nak());

    const current = this.state();
    let { db, dedupe, timer } = current;
    let dirty = false;
    const units: EmitUnit[] = [];
    executed.forEach((ex, i) => {
      const out = this.execution.outputs({ ...current, db, dedupe }, ex, ctx);
      const { msg, group } = runnable[i];
      addEmits(units, group, msg.invocationId, out.events);
      dirty ||= out.db !== db || out.dedupe !== dedupe;
      ({ db, dedupe } = out);
      if (msg.kind === 'timer' && msg.scheduledAtMs !== undefined && timer) {
        timer = { ...timer, lastSlotMs: msg.scheduledAtMs };
        dirty = true;
      }
    });
    await this.execution.publishUnits(units);
    if (dirty) {
      const recent = [...current.recent, ...runnable.map((d) => d.msg.invocationId)].slice(-RECENT_INVOCATIONS);
      await this.save({ ...current, db, dedupe, timer, recent });
    }
    if (timer?.lastSlotMs !== undefined && timer !== current.timer) this.deps.timers.processed(this.sourceId, timer.lastSlotMs);
    executed.forEach(({ result }, i) => finished(outcomes, runnable[i], result));
  }

  /**
   * Invocations the chain bounds refuse (`chainRefusal`: a subscription loop, a chain that multiplies) are not
   * run (nor counted as usage): each is acknowledged with its refusal as the run's error, an `$errors` event of this source.
   * Returns the others.
   */
  private async refuseChained(deliveries: SettledDelivery[], input: (d: SettledDelivery) => RunInput, ctx: RunContext): Promise<SettledDelivery[]> {
    const limits = { maxDepth: this.deps.config.subscriptionMaxDepth, maxRuns: this.deps.config.subscriptionChainMaxRuns };
    const refused = deliveries.map((d) => ({ d, error: chainRefusal(d.msg.chain, limits) })).filter((r) => r.error);
    if (!refused.length) return deliveries;
    const executed = refused.map(({ d, error }): Executed => ({ input: input(d), dedupe: undefined, result: { emits: [], dbWrites: {}, logs: [], error, durationMs: 0 } }));
    await this.execution.publishEvents(executed.flatMap((ex) => this.execution.outputs(this.state(), ex, ctx).events));
    for (const { d } of refused) {
      d.ack();
      this.deps.metrics.invocations.inc({ outcome: 'chain_refused', kind: d.msg.kind });
    }
    this.log().info({ invocations: refused.length, chain: refused[0].d.msg.chain }, 'not run: past SUBSCRIPTION_MAX_DEPTH or SUBSCRIPTION_CHAIN_MAX_RUNS (recorded as $errors events)');
    return deliveries.filter((d) => !refused.some((r) => r.d === d));
  }

  /** What `admit` and `finished` read of this actor. */
  private outcomes(): OutcomeContext {
    return { deps: this.deps, sourceId: this.sourceId, desired: this.desired, now: this.now, log: () => this.log() };
  }

  private ctx(): RunContext {
    return { desired: this.desired, db: this.state().db, clock: this.clock, stopped: () => this.stopped };
  }

  private log() {
    return this.deps.logger.child({ source_id: this.sourceId, partition: this.partition });
  }
}
