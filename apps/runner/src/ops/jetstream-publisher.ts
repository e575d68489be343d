import { headers } from 'nats';
import type { Logger } from 'pino';
import { API_ANSWER_HEADERS, EmittedEvent, encodeJson, HttpResponseMessage, mapSliced, randomToken, TimeSlicer, UsageRecord } from '@app/contracts';
import { StreamPublisher, type NatsService } from '@app/nats';
import type { EmitGroup, EmitUnit, Publisher } from '../actors/actor-deps';
import { EncodedRun, encodeRun, nextPart, noteStoredPart, partBody, worthStoring } from './emit-parts';
import { type EmitBudgets, withinBudgets } from './emit-budget';
import type { RunnerMetrics } from './runner-metrics';

type Prepared = { group: EmitGroup; runs: EncodedRun[] } | { loose: { event: EmittedEvent; encoded: Uint8Array }[] };

/** Whether a group's runs fit one part. */
const fitsOnePart = (runs: EncodedRun[], maxBytes: number): boolean => {
  if (!runs.length) return true;
  const { part, rest } = nextPart(runs, maxBytes);
  return !rest.length && !part.separate;
};

/** How long usage is summed per owner and day before one record is published. */
const USAGE_WINDOW_MS = 500;

/** Publishes an actor's side effects: events to EMITS, usage to USAGE, custom responses on the reply subject. */
export class JetStreamPublisher implements Publisher {
  private readonly stream: StreamPublisher;
  private readonly usage = new Map<string, Required<UsageRecord>>();
  private usageTimer: NodeJS.Timeout | undefined;
  private readonly usageToken = randomToken(10);
  private usageSeq = 0;

  constructor(
    private readonly nats: NatsService,
    private readonly logger: Logger,
    private readonly budgets: EmitBudgets = {},
    private readonly metrics?: RunnerMetrics,
  ) {
    this.stream = new StreamPublisher(nats.nc);
  }

  async publishEvents(events: EmittedEvent[]): Promise<void> {
    return this.publishUnits([{ events }]);
  }

  /**
   * Loose events go one per message (`Nats-Msg-Id` = `emitId`), a group's runs as `EmitBatch` parts
   * (`<group id>:p<n>`), all issued back to back on one connection so that they are stored in this order. A group
   * that came back (redelivered) or needs several parts publishes a part at a time, each after the previous one is
   * stored: a part found stored by an earlier delivery is read back, and what it holds is not stored again.
   */
  async publishUnits(units: EmitUnit[]): Promise<void> {
    const prepared = await this.encodeWithinBudgets(units);
    if (!prepared) return;
    const maxBytes = this.nats.maxPayload;
    const oneByOne = prepared.some((u) => 'group' in u && (u.group.redelivered || !fitsOnePart(u.runs, maxBytes)));
    if (!oneByOne) {
      await Promise.all(prepared.map((u) => ('group' in u ? this.publishGroup(u.group, u.runs, maxBytes) : this.publishLoose(u.loose))));
      return;
    }
    for (const u of prepared) await ('group' in u ? this.publishGroup(u.group, u.runs, maxBytes) : this.publishLoose(u.loose));
  }

  /**
   * The units encoded, then taken from the budgets (waiting what they owe); undefined when they hold no event. An
   * encoding long enough to hand the event loop back puts the events' accounts in hand until the take (EmitsInHand).
   */
  private async encodeWithinBudgets(units: EmitUnit[]): Promise<Prepared[] | undefined> {
    const inHand = this.budgets.inHand;
    let held: string[] | undefined;
    const slicer = new TimeSlicer(undefined, () => {
      if (!inHand || held) return;
      held = [...new Set(units.flatMap((u) => ('group' in u ? u.runs.flatMap((r) => r.events) : u.events).map((e) => e.ownerId)))];
      inHand.add(held);
    });
    try {
      const prepared: Prepared[] = [];
      for (const u of units) {
        if (!('group' in u)) {
          prepared.push({ loose: await mapSliced(u.events, (event) => ({ event, encoded: encodeJson(event) }), slicer) });
          continue;
        }
        const runs: EncodedRun[] = [];
        for (const r of u.runs) runs.push(await encodeRun(r, slicer));
        prepared.push({ group: u.group, runs });
      }
      const all = prepared.flatMap((u) => ('group' in u ? u.runs.flatMap((r) => r.run.events.map((event, i) => ({ event, encoded: r.encoded[i] }))) : u.loose));
      if (!all.length) return undefined;
      await this.withinBudgets(all.map((e) => ({ owner: e.event.ownerId, bytes: e.encoded.byteLength })));
      return prepared;
    } finally {
      if (held) inHand?.remove(held);
    }
  }

  private publishLoose(loose: { event: EmittedEvent; encoded: Uint8Array }[]): Promise<unknown> {
    return Promise.all(loose.map(({ event, encoded }) => this.stream.publish(this.nats.names.emit(event.emitterId), encoded, event.emitId)));
  }

  private looseOf(run: EncodedRun): { event: EmittedEvent; encoded: Uint8Array }[] {
    return run.run.events.map((event, i) => ({ event, encoded: run.encoded[i] }));
  }

  /** A group's runs as parts, in order; its first part is issued before this returns a pending promise. */
  private async publishGroup(group: EmitGroup, runs: EncodedRun[], maxBytes: number): Promise<void> {
    let todo = runs;
    for (;;) {
      todo = todo.filter((r) => !group.stored.has(r.run.invocationId));
      // Listed as separate by an earlier delivery's part: one per message again, where their ids dedupe.
      const known = todo.filter((r) => group.separate.has(r.run.invocationId));
      if (known.length) {
        todo = todo.filter((r) => !group.separate.has(r.run.invocationId));
        await this.publishLoose(known.flatMap((r) => this.looseOf(r)));
      }
      if (!todo.length) return;
      const { part, rest } = nextPart(todo, maxBytes);
      if (!worthStoring(part)) {
        todo = rest;
        continue;
      }
      const emitterId = [...part.runs, ...(part.separate ? [part.separate] : [])].find((r) => r.run.events.length)!.run.events[0].emitterId;
      const ack = await this.stream.publish(this.nats.names.emit(emitterId), partBody(part), `${group.id}:p${group.nextPart++}`);
      if (!ack.duplicate) {
        if (part.separate) await this.publishLoose(this.looseOf(part.separate));
        todo = rest;
        continue;
      }
      // Stored by an earlier delivery of the message: what it holds is not stored again, the rest goes in the next part.
      const stored = await this.nats.jsm.streams.getMessage(this.nats.names.emitsStream, { seq: ack.seq }).then((m) => m.data, () => undefined);
      const tried = [...part.runs, ...(part.separate ? [part.separate] : [])];
      if (!noteStoredPart(group, stored)) {
        for (const r of tried) group.stored.add(r.run.invocationId);
        this.logger.warn({ group: group.id, seq: ack.seq, invocations: tried.length }, 'a part stored by an earlier delivery is no longer in EMITS: its invocations are taken as stored');
      }
      this.metrics?.emitPartsReadBack.inc();
      todo = [...tried, ...rest];
    }
  }

  withinBudgets(messages: readonly { owner: string; bytes: number }[]): Promise<void> {
    return withinBudgets(this.budgets, messages, this.metrics?.emitsHeldBack);
  }

  close(): void {
    this.flushUsage();
    this.stream.close();
  }

  /**
   * Usage is published without waiting for JetStream's acknowledgement (a
   * core publish captured by the USAGE stream, deduplicated by its
   * `Nats-Msg-Id`); a lost record only under-counts usage. An invocation that
   * may have been counted before (`exact`) is published at once with the id
   * `usage:<invocationId>`, so it counts once. The others (first deliveries of
   * invocations with unique ids: most HTTP requests) are summed per owner and
   * UTC day for USAGE_WINDOW_MS into one record: one stored message, delivery
   * and ack for many invocations instead of one each.
   */
  publishUsage(usage: UsageRecord, exact = false): void {
    if (exact) return this.publishRecord(usage, `usage:${usage.invocationId}`);
    const key = `${usage.ownerId}|${new Date(usage.finishedAtMs).toISOString().slice(0, 10)}`;
    const sum = this.usage.get(key);
    if (sum) {
      sum.invocations += usage.invocations ?? 1;
      sum.computeMs += usage.computeMs;
      sum.sourceId = usage.sourceId;
      sum.invocationId = usage.invocationId;
      sum.finishedAtMs = usage.finishedAtMs;
    } else {
      this.usage.set(key, { ...usage, invocations: usage.invocations ?? 1 });
    }
    if (!this.usageTimer) {
      this.usageTimer = setTimeout(() => this.flushUsage(), USAGE_WINDOW_MS);
      this.usageTimer.unref?.();
    }
  }

  private publishRecord(usage: UsageRecord, msgId: string): void {
    const h = headers();
    h.set('Nats-Msg-Id', msgId);
    try {
      this.nats.nc.publish(this.nats.names.usage(usage.ownerId), encodeJson(usage), { headers: h });
    } catch (err) {
      this.logger.warn({ err, owner_id: usage.ownerId, invocation_id: usage.invocationId, invocations: usage.invocations ?? 1 }, 'usage record not published');
    }
  }

  /** Publishes the summed usage records now. */
  flushUsage(): void {
    clearTimeout(this.usageTimer);
    this.usageTimer = undefined;
    for (const usage of this.usage.values()) this.publishRecord(usage, `usage:${this.usageToken}:${++this.usageSeq}`);
    this.usage.clear();
  }

  /**
   * A custom response goes back as one NATS message: one larger than the server's `max_payload` is answered
   * `502 response_too_large` at once, instead of leaving the client to wait for the api's timeout.
   */
  reply(subject: string, response: HttpResponseMessage, of: 'source' | 'workflow' = 'source'): void {
    const data = encodeJson(response);
    const max = this.nats.maxPayload;
    if (data.byteLength <= max) return this.nats.nc.publish(subject, data);
    const error = { error: `the ${of}'s response is ${data.byteLength} bytes, over the ${max} bytes one NATS message carries (the server's max_payload)`, code: 'response_too_large' };
    this.nats.nc.publish(subject, encodeJson({ status: 502, headers: { 'content-type': 'application/json; charset=utf-8', ...API_ANSWER_HEADERS }, body: JSON.stringify(error) }));
  }
}
