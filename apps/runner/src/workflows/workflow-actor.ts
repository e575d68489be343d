import { type DesiredSourceState, type DesiredWorkflowState, chainOf, chainRefusal, encodeJson, fnv1a, unpackHttpEvent, type WorkflowSseMessage } from '@app/contracts';
import { isNatsUnavailable } from '@app/nats';
import type { ActorDeps, InvocationDelivery } from '../actors/actor-deps';
import { type ActorState, loadWithFence, StateConflictError } from '../actors/actor-state';
import { EmitterClock, type EmitterClockState } from '../actors/emit-ids';
import { replyError } from '../actors/source-execution';
import { specKey, type TimerState } from '../timers/timer-slots';
import { runEvents } from './workflow-events';
import { refusedRun, type RunOutcome, runWorkflow, withDbWrites } from './workflow-run';
import type { SendPublisher } from './workflow-sends';

/** KV `source-state`, key = workflow id. */
interface WorkflowState {
  kind: 'workflow';
  fence: string;
  /** Finished invocation ids: a redelivered one is acknowledged without running again. */
  recent: string[];
  emitter: EmitterClockState;
  timer?: TimerState;
  /** `$.service.db` of each step, by cell id. */
  dbs: Record<string, Record<string, unknown>>;
}

const RECENT = 256;
/**
 * Handlings of one invocation on this replica that may fail (the runner's own work threw, not the run) before its run
 * is recorded as failed with a `RunnerError`; until then it is handed back and tried again a second later.
 */
export const HANDLING_ATTEMPTS = 5;
/** Invocations whose failed handlings an actor counts at once; past it the oldest count is dropped. */
const FAILED_HANDLINGS_TRACKED = 1000;

/**
 * One workflow on this replica. Invocations come from the partition's consumer
 * like a source's; up to `concurrency` run at once (1: one at a time, in
 * arrival order), the rest wait unacknowledged (JetStream redelivers them to
 * the next owner if this replica dies). A run is acknowledged only after its
 * events are stored and its id is recorded, so a run cut off by a crash runs
 * again from its trigger event (at-least-once). State writes are
 * compare-and-set with this replica's fence, as for sources.
 */
export class WorkflowActor {
  private desired: DesiredWorkflowState | undefined;
  private stored: { state: WorkflowState; revision: number } | null = null;
  private loading: Promise<void> | undefined;
  private clock = new EmitterClock();
  private readonly waiting: InvocationDelivery[] = [];
  private running = 0;
  private readonly starts: number[] = [];
  private throttleTimer: NodeJS.Timeout | undefined;
  private writes: Promise<unknown> = Promise.resolve();
  private stopped = false;
  private idle: Promise<void> = Promise.resolve();
  private markIdle: () => void = () => undefined;
  private readonly now: () => number;
  /** Failed handlings so far, by invocation id (`HANDLING_ATTEMPTS`). */
  private readonly failedHandlings = new Map<string, number>();

  constructor(
    readonly sourceId: string,
    readonly partition: number,
    private readonly fence: string,
    private readonly deps: ActorDeps,
    private readonly onGone: (actor: WorkflowActor, reason: 'deleted' | 'fenced') => void,
    private readonly sends: SendPublisher,
  ) {
    this.now = deps.now ?? Date.now;
  }

  get lastDesired(): DesiredSourceState | undefined {
    return this.desired as unknown as DesiredSourceState | undefined;
  }

  setDesired(desired: DesiredSourceState): void {
    const next = desired as unknown as DesiredWorkflowState;
    if (this.stopped || (this.desired && this.desired.rev > next.rev)) return;
    this.desired = next;
    void this.guard(async () => {
      await this.load();
      await this.applyTimer();
      this.pump();
    }, () => this.retryDesired(next));
  }

  /** A desired state not applied (NATS unavailable for a moment) is applied again a second later, unless a newer one came. */
  private retryDesired(desired: DesiredWorkflowState): void {
    const timer = setTimeout(() => {
      if (!this.stopped && this.desired === desired) this.setDesired(desired as unknown as DesiredSourceState);
    }, 1000);
    timer.unref?.();
  }

  delete(): void {
    if (this.stopped) return;
    this.deps.timers.stop(this.sourceId);
    void this.guard(async () => {
      await this.load();
      await this.write(async () => {
        if (this.stored) await this.deps.store.remove(this.sourceId, this.stored.revision);
        this.stored = null;
      });
      this.log().info('workflow deleted: state removed');
      this.halt();
      this.onGone(this, 'deleted');
    }, () => setTimeout(() => this.delete(), 1000).unref?.());
  }

  invoke(delivery: InvocationDelivery): void {
    if (this.stopped) return delivery.nak();
    this.waiting.push(delivery);
    this.deps.metrics.mailboxDepth.inc();
    this.pump();
  }

  async stop(graceful: boolean): Promise<void> {
    this.halt();
    if (graceful) await this.idle;
  }

  private halt(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.deps.timers.stop(this.sourceId);
    if (this.throttleTimer) clearTimeout(this.throttleTimer);
    this.deps.metrics.mailboxDepth.dec(this.waiting.length);
    for (const d of this.waiting.splice(0)) d.nak();
  }

  private async guard(job: () => Promise<void>, onFailure?: () => void): Promise<void> {
    try {
      await job();
    } catch (e) {
      if (e instanceof StateConflictError) this.fenced();
      else {
        this.log().error({ err: e }, 'workflow job failed');
        onFailure?.();
      }
    }
  }

  private fenced(): void {
    if (this.stopped) return;
    this.log().warn('state was written by another replica: dropping the workflow actor (fenced)');
    this.deps.metrics.fenced.inc();
    this.halt();
    this.onGone(this, 'fenced');
  }

  /** Reads the state once and writes this replica's fence into it (again on the next call when that failed). */
  private load(): Promise<void> {
    this.loading ??= (async () => {
      this.stored = (await loadWithFence(this.deps.store, this.sourceId, () => this.stopped, (found) => {
        const base = (found as unknown as WorkflowState | null) ?? { kind: 'workflow', fence: this.fence, recent: [], emitter: { lastMs: 0, seq: 0 }, dbs: {} };
        return { ...base, kind: 'workflow', fence: this.fence, dbs: base.dbs ?? {}, recent: base.recent ?? [] } as unknown as ActorState;
      })) as unknown as { state: WorkflowState; revision: number };
      this.clock = new EmitterClock(this.stored?.state.emitter, this.now);
    })().catch((e: unknown) => {
      this.loading = undefined;
      throw e;
    });
    return this.loading;
  }

  /** Serializes state writes (runs finish concurrently); each is a compare-and-set. */
  private write<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.writes.then(fn, fn);
    this.writes = next.catch(() => undefined);
    return next;
  }

  private save(change: (s: WorkflowState) => WorkflowState): Promise<void> {
    return this.write(async () => {
      if (this.stopped || !this.stored) throw new StateConflictError('actor stopped');
      const state = { ...change(this.stored.state), emitter: this.clock.snapshot(), fence: this.fence };
      this.stored = { state, revision: await this.deps.store.save(this.sourceId, state as unknown as ActorState, this.stored.revision) };
    });
  }

  private async applyTimer(): Promise<void> {
    const d = this.desired;
    if (!d || !d.active || d.trigger.type !== 'timer') return this.deps.timers.stop(this.sourceId);
    const spec = d.trigger.schedule;
    let timer = this.stored?.state.timer;
    if (!timer || timer.specKey !== specKey(spec)) {
      const phase = 'intervalSeconds' in spec ? fnv1a(this.sourceId) % (spec.intervalSeconds * 1000) : 0;
      timer = { anchorMs: this.now() - phase, specKey: specKey(spec) };
      const t = timer;
      await this.save((s) => ({ ...s, timer: t }));
    }
    this.deps.timers.start(this.sourceId, this.partition, spec, timer);
  }

  private limit(): number {
    return this.desired?.concurrency ?? Number.MAX_SAFE_INTEGER;
  }

  /** Starts waiting runs while concurrency and throttle allow. */
  private pump(): void {
    if (this.stopped || !this.desired || !this.stored) return;
    while (this.waiting.length && this.running < this.limit()) {
      const wait = this.throttleWaitMs();
      if (wait > 0) {
        this.throttleTimer ??= setTimeout(() => {
          this.throttleTimer = undefined;
          this.pump();
        }, wait);
        return;
      }
      const delivery = this.waiting.shift() as InvocationDelivery;
      this.deps.metrics.mailboxDepth.dec();
      if (this.running++ === 0) this.idle = new Promise((r) => (this.markIdle = r));
      this.starts.push(this.now());
      void this.guard(() => this.handle(delivery).catch((e) => {
        delivery.nak(1000);
        throw e;
      })).finally(() => {
        if (--this.running === 0) this.markIdle();
        this.pump();
      });
    }
  }

  private throttleWaitMs(): number {
    const t = this.desired?.throttle;
    if (!t) return 0;
    const periodMs = t.periodSeconds * 1000;
    const now = this.now();
    while (this.starts.length && this.starts[0] <= now - periodMs) this.starts.shift();
    if (this.starts.length < t.limit) return 0;
    return this.starts[0] + periodMs - now;
  }

  private async handle(delivery: InvocationDelivery): Promise<void> {
    const { msg } = delivery;
    const desired = this.desired as DesiredWorkflowState;
    const state = (this.stored as { state: WorkflowState }).state;
    const skip = (outcome: string, status?: number): void => {
      if (msg.replyTo && status) replyError(this.deps.publisher, msg.replyTo, status, outcome === 'inactive' ? 'the workflow is not active' : 'the invocation was already processed');
      delivery.ack();
      this.deps.metrics.invocations.inc({ outcome, kind: msg.kind });
    };
    if (!desired.active) return skip('inactive', 404);
    if (state.recent.includes(msg.invocationId)) return skip('duplicate', 409);
    const startedAtMs = this.now();
    const event = msg.kind === 'http' ? unpackHttpEvent(msg.event) : msg.event;
    const refused = chainRefusal(msg.chain, { maxDepth: this.deps.config.subscriptionMaxDepth, maxRuns: this.deps.config.subscriptionChainMaxRuns });
    const held = this.deps.held?.share(desired.ownerId);
    let outcome: RunOutcome | undefined;
    try {
      outcome = refused
        ? refusedRun(desired, refused, startedAtMs)
        : await runWorkflow(this.deps, desired, { invocationId: msg.invocationId, event, replyTo: msg.replyTo, dbs: state.dbs, startedAtMs, stopped: () => this.stopped, held });
      await this.finish(delivery, desired, event, startedAtMs, outcome, !!refused);
      this.failedHandlings.delete(msg.invocationId);
    } catch (e) {
      if (!this.givesUp(msg.invocationId, e)) throw e;
      // Recorded (and counted) as a failed run with nothing of what it did: its steps, logs, sends or db writes may be what could not be handled.
      this.log().error({ err: e, invocation_id: msg.invocationId, attempts: HANDLING_ATTEMPTS }, 'workflow run could not be handled: recorded as failed');
      const error = { name: 'RunnerError', message: `the runner could not handle this run: ${(e as Error).message}` };
      const failed = { ...refusedRun(desired, error, this.now()), durationMs: outcome?.durationMs ?? 0, responded: outcome?.responded ?? false };
      failed.error = { ...(failed.error as NonNullable<RunOutcome['error']>), stack: `RunnerError: ${error.message}` };
      await this.finish(delivery, desired, event, startedAtMs, failed, false);
      this.failedHandlings.delete(msg.invocationId);
    } finally {
      // Its sends and outputs are published, or it comes again (also when its run or publishing threw): its account's
      // runs no longer hold them.
      held?.release();
    }
  }

  /**
   * Whether a failed handling of an invocation is its last (`HANDLING_ATTEMPTS` on this replica): never one of a stopped
   * or fenced actor, or of NATS unavailable for now, which later tries (here or on the next owner) get past.
   */
  private givesUp(invocationId: string, e: unknown): boolean {
    if (this.stopped || e instanceof StateConflictError || isNatsUnavailable(e)) return false;
    const failures = (this.failedHandlings.get(invocationId) ?? 0) + 1;
    this.failedHandlings.delete(invocationId);
    this.failedHandlings.set(invocationId, failures);
    if (this.failedHandlings.size > FAILED_HANDLINGS_TRACKED) this.failedHandlings.delete(this.failedHandlings.keys().next().value as string);
    return failures >= HANDLING_ATTEMPTS;
  }

  /** Answers, publishes and records a run that ended, then acknowledges its invocation. */
  private async finish(delivery: InvocationDelivery, desired: DesiredWorkflowState, event: unknown, startedAtMs: number, outcome: RunOutcome, refused: boolean): Promise<void> {
    const { msg } = delivery;
    if (this.stopped) return delivery.nak();
    if (msg.replyTo && !outcome.responded) {
      if (outcome.response) this.deps.publisher.reply(msg.replyTo, outcome.response, 'workflow');
      else replyError(this.deps.publisher, msg.replyTo, 502, outcome.error ? `the workflow failed before responding: ${outcome.error.message}` : 'the workflow finished without calling $.respond()');
    }
    const events = runEvents(desired, msg.invocationId, event, startedAtMs, outcome, this.clock, this.deps.config.eventMaxBytes, this.now(), chainOf(msg.invocationId, msg.chain));
    await this.deps.publisher.publishEvents(events);
    if (outcome.status !== 'error') {
      const sse = outcome.sends.filter((x) => x.kind === 'sse').map((x, i) => {
        const p = x.payload as { channel: string; payload?: unknown };
        return encodeJson({ id: `${msg.invocationId}:v${i}`, channel: p.channel, payload: p.payload ?? null, ts: this.now() } satisfies WorkflowSseMessage);
      });
      if (sse.length) {
        // Within the account's budgets as its events are: as many messages for NATS and the api's readers.
        await this.deps.publisher.withinBudgets(sse.map((m) => ({ owner: desired.ownerId, bytes: m.byteLength })));
        this.sends.publishSse(this.sourceId, sse);
      }
      const out = outcome.sends.filter((x) => x.kind !== 'emit' && x.kind !== 'sse');
      if (out.length) {
        await this.sends.publishSends(out.map((x, index) => ({ workflowId: this.sourceId, ownerId: desired.ownerId, invocationId: msg.invocationId, index, kind: x.kind as 'http' | 'email' | 's3', payload: x.payload, createdAtMs: this.now() })));
      }
    }
    for (const e of events) this.deps.metrics.emits.inc({ channel: e.name === '' ? 'default' : e.name.startsWith('$') ? e.name : 'custom' });
    await this.save((s) => {
      const dbs = this.dbsWithin({ ...s, dbs: withDbWrites(s.dbs, outcome.dbWrites) }, s.dbs, msg.invocationId);
      const timer = msg.kind === 'timer' && msg.scheduledAtMs !== undefined && s.timer ? { ...s.timer, lastSlotMs: Math.max(s.timer.lastSlotMs ?? 0, msg.scheduledAtMs) } : s.timer;
      return { ...s, dbs, timer, recent: [...s.recent, msg.invocationId].slice(-RECENT) };
    });
    if (msg.kind === 'timer' && msg.scheduledAtMs !== undefined) this.deps.timers.processed(this.sourceId, msg.scheduledAtMs);
    // A refused run is no run: not counted as usage.
    if (!refused) this.deps.publisher.publishUsage({ ownerId: desired.ownerId, sourceId: this.sourceId, invocationId: msg.invocationId, computeMs: Math.round(outcome.durationMs), finishedAtMs: this.now() }, delivery.redelivered || msg.kind === 'subscription' || msg.kind === 'timer');
    delivery.ack();
    this.deps.metrics.invocations.inc({ outcome: refused ? 'chain_refused' : outcome.status === 'error' ? 'error' : 'ok', kind: msg.kind });
    this.deps.metrics.runDuration.observe({ method: 'workflow' }, outcome.durationMs / 1000);
    if (outcome.status === 'error') this.log().info({ invocation_id: msg.invocationId, step: outcome.error?.step, error: outcome.error?.message }, 'workflow run failed (recorded as an $errors event)');
  }

  /**
   * The dbs after a run's writes, unless the state would then not fit one KV value (runs that ran at once
   * may together pass what each step's cap allowed): then the run's writes are discarded, not the state lost.
   */
  private dbsWithin(next: WorkflowState, previous: WorkflowState['dbs'], invocationId: string): WorkflowState['dbs'] {
    const max = this.deps.config.stateMaxBytes;
    if (!max || next.dbs === previous) return next.dbs;
    const bytes = encodeJson(next).length + 1024;
    if (bytes <= max) return next.dbs;
    this.log().warn({ invocation_id: invocationId, state_bytes: bytes, state_max_bytes: max }, "$.service.db writes discarded: the workflow's state would not fit one NATS message");
    return previous;
  }

  private log() {
    return this.deps.logger.child({ workflow_id: this.sourceId, partition: this.partition });
  }
}
