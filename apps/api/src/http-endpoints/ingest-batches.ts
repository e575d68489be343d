import { Injectable } from '@nestjs/common';
import type { InvocationMessage } from '@app/contracts';
import { NatsService } from '@app/nats';

/** The most requests one INVOCATIONS message holds. */
export const INGEST_BATCH_MAX = 32;
/** The most bytes of invocations one message holds (below NATS's max_payload); a larger request is stored alone. */
export const INGEST_BATCH_MAX_BYTES = 256 * 1024;
/** Weight of the newest message in the running mean of requests per message. */
const MEAN_WEIGHT = 0.2;
/** Sources whose mean is remembered; past this many the memory starts over. */
const MEANS_MAX = 100_000;

const COMMA = Buffer.from(',');
const OPEN = Buffer.from('[');
const CLOSE = Buffer.from(']');

interface Batch {
  subject: string;
  sourceId: string;
  parts: Uint8Array[];
  bytes: number;
  firstId: string;
  waiters: { resolve: () => void; reject: (e: Error) => void }[];
  sent: boolean;
}

/**
 * Stores the HTTP requests of one source that arrive in one turn of the api's event loop as one INVOCATIONS
 * message: a JSON array of their invocations (one request alone is stored as before, a plain invocation). One
 * store, one acknowledgement, one delivery to the runner and one acknowledgement by it for all of them: under
 * load, a tenth of the path's CPU (docs/benchmarks.md). Nothing waits for a batch to fill: a turn's requests go
 * when the turn ends, and each is answered once the message holding it is stored. The message's `Nats-Msg-Id` is
 * its first invocation's id. The runner runs each invocation on its own and acknowledges the message once all of
 * them are done (apps/runner/src/partitions/message-invocations.ts).
 *
 * The ingest bounds count invocations, while INVOCATIONS counts messages: `perMessage` tells how many requests
 * this replica's recent messages to a source held, by which the backlog's message counts are scaled.
 */
@Injectable()
export class IngestBatches {
  private readonly open = new Map<string, Batch>();
  private readonly means = new Map<string, number>();

  constructor(private readonly nats: NatsService) {}

  /** Stores `msg` (encoded as `data`) in INVOCATIONS under `subject`; resolves once the message holding it is stored. */
  store(subject: string, msg: InvocationMessage, data: Uint8Array): Promise<void> {
    // Within the server's max_payload too, when it is set lower (with room for the brackets and commas).
    const maxBytes = Math.min(INGEST_BATCH_MAX_BYTES, this.nats.maxPayload - 1024);
    let batch = this.open.get(subject);
    if (data.byteLength > maxBytes) {
      // Alone, after the requests to the source that came before it: a source's requests are stored in arrival order.
      if (batch) this.send(batch);
      return this.nats.streams.publish(subject, data, msg.invocationId).then(() => undefined);
    }
    if (batch && (batch.parts.length >= INGEST_BATCH_MAX || batch.bytes + data.byteLength > maxBytes)) {
      this.send(batch);
      batch = undefined;
    }
    if (!batch) {
      const opened: Batch = { subject, sourceId: msg.sourceId, parts: [], bytes: 0, firstId: msg.invocationId, waiters: [], sent: false };
      this.open.set(subject, opened);
      setImmediate(() => this.send(opened));
      batch = opened;
    }
    batch.parts.push(data);
    batch.bytes += data.byteLength;
    const into = batch;
    return new Promise<void>((resolve, reject) => into.waiters.push({ resolve, reject }));
  }

  /** Requests per message in this replica's recent messages to the source (1 when it sent none). */
  perMessage(sourceId: string): number {
    return this.means.get(sourceId) ?? 1;
  }

  private send(batch: Batch): void {
    const { sourceId } = batch;
    if (batch.sent) return;
    batch.sent = true;
    if (this.open.get(batch.subject) === batch) this.open.delete(batch.subject);
    const n = batch.parts.length;
    if (this.means.size >= MEANS_MAX) this.means.clear();
    const mean = this.means.get(sourceId);
    if (mean !== undefined || n > 1) this.means.set(sourceId, mean === undefined ? n : mean + (n - mean) * MEAN_WEIGHT);
    const payload = n === 1 ? batch.parts[0] : Buffer.concat([OPEN, ...batch.parts.flatMap((p, i) => (i ? [COMMA, p] : [p])), CLOSE]);
    // StreamPublisher.publish rejects, it does not throw.
    this.nats.streams.publish(batch.subject, payload, batch.firstId).then(
      () => batch.waiters.forEach((w) => w.resolve()),
      (e: Error) => batch.waiters.forEach((w) => w.reject(e)),
    );
  }
}
