import { createInbox, headers, Msg, NatsConnection, Subscription } from 'nats';

/** A publish that got no answer (in time, or from anyone: no stream responder) or was cut off by closing: it may succeed later. */
export class PublishUnavailableError extends Error {}

/** What the stream answered: where the message is stored, and whether an earlier copy (same `Nats-Msg-Id`) was. */
export interface PublishAck {
  seq: number;
  duplicate: boolean;
}

interface Pending {
  resolve: (ack: PublishAck) => void;
  reject: (e: Error) => void;
  atMs: number;
  subject: string;
  data: Uint8Array;
  msgId: string;
}

/**
 * Publishes to JetStream and waits for the stream's acknowledgement, like
 * `js.publish`, but through one reply subscription for all publishes and one
 * timeout sweep, instead of a request (with its timer and captured stack
 * trace) per message. The hot paths use it: the api storing each HTTP
 * invocation, the runner's emits, the router's deliveries.
 *
 * After the connection moved to another server (the one it used died or was cut off), every publish
 * still waiting for its acknowledgement is sent again: it, or its acknowledgement, may have been lost
 * with the old server. Every message carries its `Nats-Msg-Id`, so a stream that stored the first copy
 * stores nothing twice (within its duplicate window) and acknowledges the second as a duplicate.
 */
export class StreamPublisher {
  private readonly inbox: string;
  private readonly pending = new Map<string, Pending>();
  private readonly sub: Subscription;
  private readonly sweep: NodeJS.Timeout;
  private seq = 0;
  private closed = false;

  /** `inboxPrefix`: the connection's own (`NATS_INBOX_PREFIX`) unless given: its user may subscribe to no other. */
  constructor(private readonly nc: NatsConnection, private readonly timeoutMs = 10_000, inboxPrefix?: string) {
    this.inbox = createInbox(inboxPrefix ?? (nc as unknown as { options?: { inboxPrefix?: string } }).options?.inboxPrefix);
    this.sub = nc.subscribe(`${this.inbox}.*`, { callback: (err, m) => (err ? undefined : this.onAck(m)) });
    this.sweep = setInterval(() => this.expire(), Math.min(1000, timeoutMs));
    this.sweep.unref?.();
    void this.resendAfterReconnects();
  }

  private async resendAfterReconnects(): Promise<void> {
    for await (const s of this.nc.status()) {
      if (s.type !== 'reconnect' || this.closed) continue;
      const now = Date.now();
      // Re-inserted so that the map stays in time order for the sweep.
      const again = [...this.pending];
      this.pending.clear();
      for (const [token, p] of again) {
        this.pending.set(token, { ...p, atMs: now });
        this.send(token, p.subject, p.data, p.msgId);
      }
    }
  }

  private send(token: string, subject: string, data: Uint8Array, msgId: string): void {
    const h = headers();
    h.set('Nats-Msg-Id', msgId);
    this.nc.publish(subject, data, { headers: h, reply: `${this.inbox}.${token}` });
  }

  /** Resolves once the stream stored the message (or recognised `msgId` as a duplicate: then `seq` is the earlier copy's). */
  publish(subject: string, data: Uint8Array, msgId: string): Promise<PublishAck> {
    const token = (++this.seq).toString(36);
    return new Promise<PublishAck>((resolve, reject) => {
      this.pending.set(token, { resolve, reject, atMs: Date.now(), subject, data, msgId });
      try {
        this.send(token, subject, data, msgId);
      } catch (e) {
        this.pending.delete(token);
        reject(e as Error);
      }
    });
  }

  close(): void {
    this.closed = true;
    clearInterval(this.sweep);
    this.sub.unsubscribe();
    for (const p of this.pending.values()) p.reject(new PublishUnavailableError('publisher closed'));
    this.pending.clear();
  }

  private onAck(m: Msg): void {
    const token = m.subject.slice(m.subject.lastIndexOf('.') + 1);
    const p = this.pending.get(token);
    if (!p) return;
    this.pending.delete(token);
    if (m.headers && m.headers.code >= 400) {
      const Failure = m.headers.code === 503 ? PublishUnavailableError : Error;
      return p.reject(new Failure(`publish failed: ${m.headers.code} ${m.headers.description || 'no stream for the subject'}`));
    }
    let ack: { error?: { description?: string }; seq?: number; duplicate?: boolean };
    try {
      ack = m.json();
    } catch {
      return p.reject(new Error('publish failed: unreadable acknowledgement'));
    }
    if (ack.error) return p.reject(new Error(`publish failed: ${ack.error.description ?? 'JetStream error'}`));
    p.resolve({ seq: ack.seq ?? 0, duplicate: ack.duplicate === true });
  }

  private expire(): void {
    const limit = Date.now() - this.timeoutMs;
    for (const [token, p] of this.pending) {
      if (p.atMs > limit) break; // insertion order = time order
      this.pending.delete(token);
      p.reject(new PublishUnavailableError(`publish not acknowledged within ${this.timeoutMs} ms`));
    }
  }
}
