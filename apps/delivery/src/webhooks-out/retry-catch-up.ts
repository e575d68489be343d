import type { Logger } from '@app/config';
import { CATCH_UP_BATCH, RetryQueue } from './retry-queue';

/** Least time between two catch-ups of one webhook. */
const CATCH_UP_EVERY_MS = 250;
/** A success looks for waiting retries (kept by any replica) at least this often per webhook. */
const CATCH_UP_CHECK_MS = 10_000;
/** After a failure seen here, every success of the webhook looks for waiting retries (at most once per CATCH_UP_EVERY_MS). */
const CATCH_UP_AFTER_FAILURE_MS = 3_600_000;

interface CatchUp {
  failedAtMs: number;
  succeededAtMs: number;
  checkedAtMs: number;
  timer?: NodeJS.Timeout;
}

/**
 * Per webhook: the last failure seen by this process, and the pulling forward
 * of its waiting retries once it answers again (so an endpoint that came back
 * gets its backlog within seconds, not at each retry's due time).
 */
export class RetryCatchUp {
  private readonly state = new Map<string, CatchUp>();
  private stopped = false;

  constructor(
    private readonly retries: RetryQueue,
    private readonly logger: Logger,
    /** Deliveries of the webhook waiting in this process. */
    private readonly queued: (webhookId: string) => number,
  ) {}

  /** When the webhook last failed here (0: not recently, or its retries have all been pulled forward). */
  failedAtMs(webhookId: string): number {
    return this.state.get(webhookId)?.failedAtMs ?? 0;
  }

  noteFailure(webhookId: string): void {
    this.of(webhookId).failedAtMs = Date.now();
  }

  /** Drops the state of a webhook that is gone. */
  forget(webhookId: string): void {
    clearTimeout(this.state.get(webhookId)?.timer);
    this.state.delete(webhookId);
  }

  stop(): void {
    this.stopped = true;
    for (const c of this.state.values()) clearTimeout(c.timer);
  }

  /**
   * After a success, pulls the webhook's waiting retries forward. Bounded and
   * paced by the endpoint: CATCH_UP_BATCH rows at a time, at most every
   * CATCH_UP_EVERY_MS per webhook, only once the previous batch has been
   * republished and while the webhook's queue here is short (a slow endpoint
   * is not flooded, and cannot make the process hold too much). A follow-up
   * timer takes the next batch, and stops as soon as the endpoint fails again
   * (its next success starts over). A webhook with no failure seen here
   * (another replica may have queued its retries) is checked every
   * CATCH_UP_CHECK_MS.
   */
  afterSuccess(webhookId: string, attempt: number, followUp = false): void {
    const now = Date.now();
    const c = this.of(webhookId);
    if (!followUp) c.succeededAtMs = now;
    else if (c.failedAtMs > c.succeededAtMs) return; // failing again: no more pulling forward
    const suspect = followUp || attempt > 1 || now - c.failedAtMs < CATCH_UP_AFTER_FAILURE_MS;
    if (!suspect && now - c.checkedAtMs < CATCH_UP_CHECK_MS) return;
    if (now - c.checkedAtMs < CATCH_UP_EVERY_MS || this.queued(webhookId) > CATCH_UP_BATCH / 4) {
      if (suspect) this.followUp(webhookId, c);
      return;
    }
    c.checkedAtMs = now;
    this.retries
      .catchUp(webhookId)
      .then((n) => {
        if (n > 0) this.logger.info({ webhook_id: webhookId, retries: n }, 'endpoint is back: waiting retries pulled forward');
        // More may wait, or the last batch is still being republished: look again shortly.
        if (n !== 0) this.followUp(webhookId, c);
        // Nothing waits any more: back to the occasional check until the next failure.
        else if (c.failedAtMs <= now) c.failedAtMs = 0;
      })
      .catch((e: Error) => this.logger.warn({ err: e.message, webhook_id: webhookId }, 'pulling retries forward failed'));
  }

  private of(webhookId: string): CatchUp {
    let c = this.state.get(webhookId);
    if (!c) this.state.set(webhookId, (c = { failedAtMs: 0, succeededAtMs: 0, checkedAtMs: 0 }));
    return c;
  }

  private followUp(webhookId: string, c: CatchUp): void {
    if (c.timer || this.stopped) return;
    c.timer = setTimeout(() => {
      c.timer = undefined;
      this.afterSuccess(webhookId, 2, true);
    }, CATCH_UP_EVERY_MS);
    c.timer.unref?.();
  }
}
