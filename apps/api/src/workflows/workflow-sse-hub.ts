import { Injectable } from '@nestjs/common';
import type { Subscription } from 'nats';
import { decodeJson, WorkflowSseMessage } from '@app/contracts';
import { NatsService } from '@app/nats';

/** One `$.send.sse` message as every reader of the workflow gets it: its SSE text, and its size. */
export type SseText = { text: string; bytes: number };

interface Topic {
  sub: Subscription;
  readers: Set<(m: SseText) => void>;
  /** Settles once the server has the subscription. */
  ready: Promise<void>;
}

/**
 * The live `$.send.sse` messages of workflows on this api replica: one NATS subscription per workflow that has
 * readers here, each message decoded and written as SSE text once and handed to every reader. A subscription per
 * reader had NATS deliver each message, and the api decode it, once per reader: one account's workflow sending
 * 8 MiB a run to 64 readers of its own had the api's thread decode half a GiB a run, and every other account's
 * requests waited behind it.
 */
@Injectable()
export class WorkflowSseHub {
  private readonly topics = new Map<string, Topic>();

  constructor(private readonly nats: NatsService) {}

  get subscriptions(): number {
    return this.topics.size;
  }

  get readers(): number {
    let n = 0;
    for (const t of this.topics.values()) n += t.readers.size;
    return n;
  }

  /** Adds a reader of `workflowId`'s messages once the server has the subscription; returns its leave (idempotent). */
  async join(workflowId: string, reader: (m: SseText) => void): Promise<() => void> {
    let topic = this.topics.get(workflowId);
    if (!topic) {
      const sub = this.nats.nc.subscribe(this.nats.names.workflowSse(workflowId));
      topic = { sub, readers: new Set(), ready: this.nats.nc.flush() };
      this.topics.set(workflowId, topic);
      void this.pump(topic);
    }
    const joined = topic;
    joined.readers.add(reader);
    const leave = (): void => {
      joined.readers.delete(reader);
      if (joined.readers.size || this.topics.get(workflowId) !== joined) return;
      this.topics.delete(workflowId);
      joined.sub.unsubscribe();
    };
    try {
      await joined.ready;
    } catch (e) {
      leave();
      throw e;
    }
    return leave;
  }

  private async pump(topic: Topic): Promise<void> {
    for await (const m of topic.sub) {
      let text: string;
      try {
        const e = decodeJson<WorkflowSseMessage>(m.data);
        text = `id: ${e.id}\nevent: ${e.channel}\ndata: ${JSON.stringify(e.payload)}\n\n`;
      } catch {
        continue;
      }
      const message = { text, bytes: Buffer.byteLength(text) };
      for (const reader of topic.readers) {
        try {
          reader(message);
        } catch {
          // One reader's failure is its own: the others still get the message.
        }
      }
    }
  }
}
