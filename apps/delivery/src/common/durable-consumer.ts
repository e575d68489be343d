import { Consumer, ConsumerMessages, JetStreamClient, JsMsg } from 'nats';
import type { Logger } from '@app/config';
import { boundConsumer, pullEach } from '@app/nats';

export interface BatchOptions {
  /** Largest batch handed to the handler. */
  maxBatch: number;
  /** How long to wait for more messages before handling a partial batch (latency versus batching). */
  lingerMs: number;
}

/** Messages buffered at most, in largest batches. */
const BUFFERED_BATCHES = 4;
/** Bytes buffered about at most: a pull asks for no more messages than fit in the room left at their recent mean size. */
const BUFFERED_BYTES_MAX = 32 * 1024 * 1024;
/** The mean message size assumed before any came. */
const FIRST_MEAN_BYTES = 16 * 1024;
/** How long a pull waits for its messages (an idle consumer asks again this often). */
const PULL_EXPIRES_MS = 5_000;
/** Pause after a pull that failed (no stream or consumer for a moment, as while JetStream elects a leader). */
const PULL_RETRY_MS = 1_000;

/**
 * Pulls from a durable consumer and hands messages to `handle` in batches,
 * one batch at a time. The handler decides each message's fate (ack, nak with
 * a delay, term); a thrown error naks the whole batch for redelivery.
 *
 * It asks JetStream for messages only while its buffer has room: at most BUFFERED_BATCHES of the largest batch and
 * about BUFFERED_BYTES_MAX. It used to take them as fast as they came, up to the consumer's max_ack_pending (20,000):
 * under a backlog of one account's 16 KB log lines the router held 730 MB of them in memory
 * (test/delivery-backlog-ack-wait.e2e-spec.ts).
 */
export class BatchConsumer {
  private buffer: JsMsg[] = [];
  private bufferedBytes = 0;
  private meanBytes = FIRST_MEAN_BYTES;
  private wake?: () => void;
  private roomFreed?: () => void;
  private pull?: ConsumerMessages;
  private stopped = false;
  private loop?: Promise<void>;
  private pulling?: Promise<void>;
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
    // Every message taken and not yet settled is kept alive, the buffered ones too: under a backlog they wait here
    // longer than the ack wait allows; unkept, JetStream delivered them again while they waited, and one account's
    // flood of logs had the router index 10 % of its events twice while every other account's events waited over 30 s
    // (test/delivery-backlog-ack-wait.e2e-spec.ts).
    this.keepAlive = setInterval(() => {
      for (const m of this.batch) m.working();
      for (const m of this.buffer) m.working();
    }, Math.max(500, this.ackWaitMs / 3));
    this.pulling = this.pullWhileRoom(consumer);
    this.loop = this.run();
  }

  /** Messages a buffer holding these may still take: in messages, and (at their mean size) in bytes. */
  private room(messages = this.buffer.length, bytes = this.bufferedBytes): number {
    return Math.min(this.opts.maxBatch * BUFFERED_BATCHES - messages, Math.floor((BUFFERED_BYTES_MAX - bytes) / this.meanBytes));
  }

  /** Pulls again each time the last pull ended and at least a quarter of the buffer is free. */
  private async pullWhileRoom(consumer: Consumer): Promise<void> {
    while (!this.stopped) {
      const room = this.room();
      if (room < Math.max(1, this.room(0, 0) / 4)) {
        await new Promise<void>((r) => (this.roomFreed = r));
        continue;
      }
      let failed: Error | void;
      try {
        this.pull = await pullEach(consumer, { max_messages: room, expires: PULL_EXPIRES_MS }, (m) => this.take(m));
        if (this.stopped) this.pull.stop(); // stopped while the pull was being made
        failed = await this.pull.closed();
      } catch (e) {
        failed = e as Error;
      }
      if (failed && !this.stopped) {
        this.logger.warn({ err: failed.message, durable: this.durable }, 'pulling failed; pulling again');
        await sleep(PULL_RETRY_MS);
      }
    }
  }

  private take(m: JsMsg): void {
    if (this.stopped) return m.nak();
    this.buffer.push(m);
    this.bufferedBytes += m.data.length;
    this.meanBytes = Math.max(1, this.meanBytes * 0.95 + m.data.length * 0.05);
    this.wake?.();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (!this.buffer.length) await new Promise<void>((r) => (this.wake = r));
      this.wake = undefined;
      if (this.stopped) break;
      if (this.buffer.length < this.opts.maxBatch && this.opts.lingerMs > 0) await sleep(this.opts.lingerMs);
      const batch = this.buffer.splice(0, this.opts.maxBatch);
      for (const m of batch) this.bufferedBytes -= m.data.length;
      this.roomFreed?.();
      this.roomFreed = undefined;
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
    this.pull?.stop();
    this.roomFreed?.();
    this.wake?.();
    await this.loop;
    await this.pulling;
    clearInterval(this.keepAlive);
    for (const m of this.buffer.splice(0)) m.nak();
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
