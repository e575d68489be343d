import { Injectable } from '@nestjs/common';
import { DeliverPolicy } from 'nats';
import { decodeJson, EmittedEvent } from '@app/contracts';
import { NatsService } from '@app/nats';
import { parseEventId } from './event-summary.dto';

type EventIdParts = { ms: number; seq: number };

/** How far before `start_id`'s time the scan begins: an emitter's clock may run ahead of the stream's. */
const SCAN_SLACK_MS = 5_000;
const FETCH_BATCH = 500;
const FETCH_EXPIRES_MS = 1_000;

const order = (a: EventIdParts, b: EventIdParts): number => a.ms - b.ms || a.seq - b.seq;

/**
 * Removes deleted events from `EMITS` as well as from event summaries: an event
 * stream resumed with `Last-Event-ID` replays from `EMITS`, so an event deleted
 * only in Postgres would come back there, and a copy would outlive the delete by
 * up to `EMITS_MAX_AGE_SECONDS`. Every event of the emitter: one purge of its
 * subject. A range: its messages are read once (from `start_id`'s time) and the
 * matching ones deleted one by one. Either way only messages stored before the
 * request are touched.
 */
@Injectable()
export class EmitsEraser {
  constructor(private readonly nats: NatsService) {}

  /** Erases the emitter's events in the inclusive range (all when neither end is given); returns how many. */
  async erase(emitterId: string, start?: EventIdParts, end?: EventIdParts): Promise<number> {
    const stream = this.nats.names.emitsStream;
    const subject = this.nats.names.emit(emitterId);
    // Events emitted after the request are not the ones it deleted: the scan stops at the stream's end as of now.
    const lastSeq = (await this.nats.jsm.streams.info(stream)).state.last_seq;
    if (!start && !end) return (await this.nats.jsm.streams.purge(stream, { filter: subject, seq: lastSeq + 1 })).purged;
    // Without `start_id` the scan starts at the stream's first message: the ordered consumer's own default
    // (from sequence 1). `DeliverPolicy.All` would be refused, as the client also sends a start sequence.
    const consumer = await this.nats.js.consumers.get(stream, {
      filterSubjects: subject,
      ...(start ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(Math.max(0, start.ms - SCAN_SLACK_MS)).toISOString() } : {}),
    });
    let erased = 0;
    for (;;) {
      const batch = await consumer.fetch({ max_messages: FETCH_BATCH, expires: FETCH_EXPIRES_MS });
      let seen = 0;
      let last = false;
      for await (const m of batch) {
        seen++;
        last = m.info.pending === 0 || m.seq >= lastSeq;
        if (m.seq > lastSeq) break;
        const id = eventIdOf(m.data);
        if (id && (!start || order(id, start) >= 0) && (!end || order(id, end) <= 0)) {
          if (await this.nats.jsm.streams.deleteMessage(stream, m.seq, false)) erased++;
        }
        if (last) break;
      }
      if (!seen || last) return erased;
    }
  }
}

function eventIdOf(data: Uint8Array): EventIdParts | undefined {
  try {
    const id = decodeJson<EmittedEvent>(data).id;
    return typeof id === 'string' ? parseEventId(id) : undefined;
  } catch {
    return undefined;
  }
}
