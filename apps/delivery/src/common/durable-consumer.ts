import { ConsumerMessages, JetStreamClient, JsMsg } from 'nats';
import type { Logger } from '@app/config';
import { boundConsumer, consumeEach } from '@app/nats';

export interface BatchOptions {
  /** Largest batch handed to the handler. */
  maxBatch: number;
  /** How long to wait for more messages before handling a partial batch (latency versus batching). */
  lingerMs: number;
}

/**
 * Pulls from a durable consumer and hands messages to `handle` in batches,
 * one batch at a time. The handler decides each message's fate (ack, nak with
 * a delay, term); a thrown error naks the whole batch for redelivery.
 */
export class BatchConsumer {
  private buffer: JsMsg[] = [];
  private wake?: () => void;
  private messages?: ConsumerMessages;
  private stopped = false;
  private loop?: Promise<void>;
  /** The batch being handled (empty between batches). */
  private batch: JsMsg[] = [];
  private keepAlive?: NodeJS.Timeout;

  constructor(
    private readonly js: JetStreamClient,
    private readonly stream: string,
    private readonly durable: string,
    private readonly handle: (batch: JsMsg[]) => Promise<void>,
    private readonly opts: BatchOptions,
    private readonly logger: Logger,
    /** The consumer's ack wait: messages held longer are kept alive with `working()`. */
    private readonly ackWaitMs: number,
  ) {}

  async start(): Promise<void> {
    const consumer = await boundConsumer(this.js, this.stream, this.durable);
    this.messages = await consumeEach(
      consumer,
      { max_messages: this.opts.maxBatch * 2 },
      (m) => {
        if (this.stopped) return m.nak();
        this.buffer.push(m);
        this.wake?.();
      },
      (e) => this.logger.error({ err: e.message, durable: this.durable }, 'consumer stopped'),
    );
    // Every message taken and not yet settled is kept alive, the buffered ones too: the client pulls again as soon as
    // messages arrive, so under a backlog the buffer holds up to the consumer's max_ack_pending (20,000), more than
    // its ack wait's worth; unkept, JetStream delivered them again while they waited here, the buffer took the copies
    // behind them, and one account's flood of logs had the router index 10 % of its events twice while every other
    // account's events waited over 30 s (test/delivery-backlog-ack-wait.e2e-spec.ts).
    this.keepAlive = setInterval(() => {
      for (const m of this.batch) m.working();
      for (const m of this.buffer) m.working();
    }, Math.max(500, this.ackWaitMs / 3));
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (!this.buffer.length) await new Promise<void>((r) => (this.wake = r));
      this.wake = undefined;
      if (this.stopped) break;
      if (this.buffer.length < this.opts.maxBatch && this.opts.lingerMs > 0) await sleep(this.opts.lingerMs);
      const batch = this.buffer.splice(0, this.opts.maxBatch);
      if (!batch.length) continue;
      this.batch = batch;
      try {
        await this.handle(batch);
      } catch (e) {
        this.logger.error({ err: (e as Error).message, durable: this.durable, size: batch.length }, 'batch failed; redelivering');
        for (const m of batch) m.nak(1000);
        await sleep(500);
      } finally {
        this.batch = [];
      }
    }
  }

  /** Messages pulled and not yet handed back from the handler: buffered, or in the batch being handled. */
  get pending(): number {
    return this.buffer.length + this.batch.length;
  }

  /** Stops pulling; the batch in progress finishes; unhandled buffered messages are redelivered later. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.messages?.stop();
    this.wake?.();
    await this.loop;
    clearInterval(this.keepAlive);
    for (const m of this.buffer.splice(0)) m.nak();
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
