import type { Logger } from 'pino';
import { encodeJson, InvocationMessage } from '@app/contracts';
import type { NatsService } from '@app/nats';
import type { TimerPort } from '../actors/actor-deps';
import type { TimerSpec } from '../actors/props';
import type { RunnerMetrics } from '../ops/runner-metrics';
import { TimerHeap } from './timer-heap';
import { planTimer, slotAfter, timerEvent, TimerState } from './timer-slots';

interface Scheduled {
  partition: number;
  spec: TimerSpec;
  state: TimerState;
}

/**
 * Every timer source owned by this replica on one heap. A due slot becomes an
 * invocation published to the source's partition with a deterministic
 * `Nats-Msg-Id` (`tmr.<sourceId>.<slotMs>`), so it goes through the source's
 * mailbox, survives a crash, and a slot published twice (old and new owner)
 * is stored once.
 */
export class TimerService implements TimerPort {
  private readonly scheduled = new Map<string, Scheduled>();
  private readonly heap: TimerHeap;

  constructor(
    private readonly nats: NatsService,
    private readonly metrics: RunnerMetrics,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.heap = new TimerHeap((key, atMs) => this.due(key, atMs), now);
  }

  start(sourceId: string, partition: number, spec: TimerSpec, state: TimerState): void {
    this.scheduled.set(sourceId, { partition, spec, state });
    const plan = planTimer(spec, state, this.now());
    if (plan.catchUpMs !== undefined) this.fire(sourceId, plan.catchUpMs);
    this.heap.schedule(sourceId, plan.nextMs);
    this.metrics.timerSources.set(this.scheduled.size);
  }

  stop(sourceId: string): void {
    if (!this.scheduled.delete(sourceId)) return;
    this.heap.cancel(sourceId);
    this.metrics.timerSources.set(this.scheduled.size);
  }

  close(): void {
    this.heap.stop();
    this.scheduled.clear();
    this.metrics.timerSources.set(0);
  }

  private due(sourceId: string, slotMs: number): void {
    const s = this.scheduled.get(sourceId);
    if (!s) return;
    this.fire(sourceId, slotMs);
    this.heap.schedule(sourceId, slotAfter(s.spec, s.state, Math.max(slotMs, this.now())));
  }

  private fire(sourceId: string, slotMs: number): void {
    const s = this.scheduled.get(sourceId);
    if (!s) return;
    const invocationId = `tmr.${sourceId}.${slotMs}`;
    const msg: InvocationMessage = { invocationId, sourceId, kind: 'timer', event: timerEvent(s.spec, slotMs), createdAtMs: this.now(), scheduledAtMs: slotMs };
    this.nats.js
      .publish(this.nats.names.invocation(s.partition, sourceId), encodeJson(msg), { msgID: invocationId })
      .catch((err: Error) => this.logger.error({ err, source_id: sourceId, partition: s.partition }, 'timer invocation not published'));
  }
}
