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
  /** The last slot fired whose run has not been processed yet, and when it was fired. */
  waiting?: { slotMs: number; firedAtMs: number };
}

/**
 * Every timer source owned by this replica on one heap. A due slot becomes an
 * invocation published to the source's partition with a deterministic
 * `Nats-Msg-Id` (`tmr.<sourceId>.<slotMs>`), so it goes through the source's
 * mailbox, survives a crash, and a slot published twice (old and new owner)
 * is stored once.
 *
 * A slot is not fired while the source's previous one waits to be processed (as a restart fires one catch-up slot
 * for all it missed), for up to `waitingMaxMs` (the longest run, MAX_RUN_TIMEOUT_MS: a slot whose processing was
 * never reported does not stop the timer). Fired regardless, the slots of a source whose runs hang piled up in its
 * partition (twenty per five-minute run at 15 s), and an account's hung timers filled the partition consumer's
 * `max_ack_pending` with invocations handed back for fairness: the partition's other accounts' sources stopped.
 */
export class TimerService implements TimerPort {
  private readonly scheduled = new Map<string, Scheduled>();
  private readonly heap: TimerHeap;

  constructor(
    private readonly nats: NatsService,
    private readonly metrics: RunnerMetrics,
    private readonly logger: Logger,
    private readonly waitingMaxMs: number,
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

  /** The source's run of `slotMs` was processed: its next slot may be fired. */
  processed(sourceId: string, slotMs: number): void {
    const s = this.scheduled.get(sourceId);
    if (s?.waiting && slotMs >= s.waiting.slotMs) s.waiting = undefined;
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
    const now = this.now();
    if (s.waiting && now - s.waiting.firedAtMs < this.waitingMaxMs) return void this.metrics.timerSlotsSkipped.inc();
    const waiting = (s.waiting = { slotMs, firedAtMs: now });
    const invocationId = `tmr.${sourceId}.${slotMs}`;
    const msg: InvocationMessage = { invocationId, sourceId, kind: 'timer', event: timerEvent(s.spec, slotMs), createdAtMs: now, scheduledAtMs: slotMs };
    this.nats.js
      .publish(this.nats.names.invocation(s.partition, sourceId), encodeJson(msg), { msgID: invocationId })
      .catch((err: Error) => {
        if (s.waiting === waiting) s.waiting = undefined;
        this.logger.error({ err, source_id: sourceId, partition: s.partition }, 'timer invocation not published');
      });
  }
}
