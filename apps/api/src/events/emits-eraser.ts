import { Injectable } from '@nestjs/common';
import { DeliverPolicy, headers as natsHeaders, JsMsg } from 'nats';
import { EmitBatch, EmittedEvent, EMITS_ROUTED_HEADER, encodeJson, parseEventId, readEmits, ROUTER_DURABLE } from '@app/contracts';
import { boundedFetches, NatsService } from '@app/nats';

type EventIdParts = { ms: number; seq: number };

/** How far before `start_id`'s time the scan begins: an emitter's clock may run ahead of the stream's. */
const SCAN_SLACK_MS = 5_000;
/** A range's messages deleted at once: one delete at a time waited out a round trip each (most of a range's time). */
const DELETES_IN_FLIGHT = 16;

const order = (a: EventIdParts, b: EventIdParts): number => a.ms - b.ms || a.seq - b.seq;

/**
 * Removes deleted events from `EMITS` as well as from event summaries: an event
 * stream resumed with `Last-Event-ID` replays from `EMITS`, so an event deleted
 * only in Postgres would come back there, and a copy would outlive the delete by
 * up to `EMITS_MAX_AGE_SECONDS`. Every event of the emitter: one purge of its
 * subject. A range: its messages are read once (from `start_id`'s time) and
 * those whose events are all in it deleted, 16 requests at a time. A message holding events
 * of several invocations (an `EmitBatch`) partly in the range cannot be edited:
 * its other events are stored again as one new message (at the stream's end,
 * with their ids; `Nats-Msg-Id` `erase:<its sequence>`, so a retried delete
 * stores them once; `Ess-Routed` when the router had acknowledged it, so they are
 * not routed twice), and only once that is acknowledged is the original deleted:
 * a crash in between leaves a duplicate, never a loss. Either way only messages
 * stored before the request are touched (a copy stored by the scan is not
 * scanned again).
 */
@Injectable()
export class EmitsEraser {
  constructor(private readonly nats: NatsService) {}

  /**
   * Erases the emitter's events in the inclusive range (all when neither end is given) stored up to `lastSeq` (the
   * stream's end when the request came: later events are not the ones it deleted); returns how many (for all, the
   * messages purged: a message holding several events counts once).
   */
  async erase(emitterId: string, lastSeq: number, start?: EventIdParts, end?: EventIdParts): Promise<number> {
    const stream = this.nats.names.emitsStream;
    const subject = this.nats.names.emit(emitterId);
    if (!start && !end) return (await this.nats.jsm.streams.purge(stream, { filter: subject, seq: lastSeq + 1 })).purged;
    // Read before the scan: a message the router acknowledges during it gets no `Ess-Routed` and may be routed
    // twice, never not at all. No router yet (no delivery app started): nothing was routed.
    const routedSeq = await this.nats.jsm.consumers.info(stream, ROUTER_DURABLE).then((c) => c.ack_floor.stream_seq, () => 0);
    const inRange = (e: EmittedEvent): boolean => {
      const id = typeof e?.id === 'string' ? parseEventId(e.id) : undefined;
      return !!id && (!start || order(id, start) >= 0) && (!end || order(id, end) <= 0);
    };
    // Without `start_id` the scan starts at the stream's first message: the ordered consumer's own default
    // (from sequence 1). `DeliverPolicy.All` would be refused, as the client also sends a start sequence. A `start_id`
    // in the future starts it now (nothing was stored later): NATS reads no time past the year 9999, and a start of
    // `999999999999999-0` (year 33658) had the ordered consumer try to make itself for a minute before failing
    // (`invalid json`), every later deletion of the account waiting behind it.
    const consumer = await this.nats.js.consumers.get(stream, {
      filterSubjects: subject,
      ...(start ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(Math.min(Date.now(), Math.max(0, start.ms - SCAN_SLACK_MS))).toISOString() } : {}),
    });
    // The scan holds one fetch of 2 MiB at most (BATCH_BYTES), the next once it has erased them. 500 messages at a
    // time were up to 500 MB of the api's memory for each account deleting; 2 at a time, 600 fetches for 1,200 events.
    let erased = 0;
    try {
      for await (const messages of boundedFetches(consumer, lastSeq, this.nats.maxPayload)) {
        const erasing = messages.map((m) => ({ m, events: readEmits(m.data) ?? [] })).filter(({ events }) => events.some(inRange));
        for (let i = 0; i < erasing.length; i += DELETES_IN_FLIGHT) {
          const wave = erasing.slice(i, i + DELETES_IN_FLIGHT);
          // The copies one after another, in the originals' order; each original deleted once its copy is stored.
          for (const { m, events } of wave) await this.storeSurvivors(m, events.filter((e) => !inRange(e)), routedSeq);
          const deleted = await Promise.all(wave.map(({ m }) => this.nats.jsm.streams.deleteMessage(stream, m.seq, false)));
          wave.forEach(({ events }, k) => (erased += deleted[k] ? events.filter(inRange).length : 0));
        }
      }
    } finally {
      // Not left on the server for its inactivity threshold (each range delete made one that stayed 5 minutes).
      await consumer.delete().catch(() => undefined);
    }
    return erased;
  }

  /** Stores `survivors` (the events of message `m` out of the range), when there are any, as a new message. */
  private async storeSurvivors(m: JsMsg, survivors: EmittedEvent[], routedSeq: number): Promise<void> {
    if (!survivors.length) return;
    const copy: EmitBatch = { invocations: [], events: survivors };
    const routed = routedSeq >= m.seq ? natsHeaders() : undefined;
    routed?.set(EMITS_ROUTED_HEADER, '1');
    await this.nats.js.publish(m.subject, encodeJson(copy), { msgID: `erase:${m.seq}`, ...(routed ? { headers: routed } : {}) });
  }
}
