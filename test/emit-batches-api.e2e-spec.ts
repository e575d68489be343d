import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { AckPolicy, connect, headers as natsHeaders, NatsConnection, PubAck } from 'nats';
import { loadConfig } from '@app/config';
import { EmitBatch, EmittedEvent, EMITS_ROUTED_HEADER, encodeJson, Names, parseEventId, ROUTER_DURABLE } from '@app/contracts';
import { createApiApp } from '../apps/api/src/bootstrap';
import { EmitsEraser } from '../apps/api/src/events/emits-eraser';
import { InvocationBacklog } from '../apps/api/src/http-endpoints/invocation-backlog';
import { client, createUser, TestUser } from './support/accounts';
import { natsAdmin, natsAdminEnv } from './support/env';
import { eventually, startSystem, System } from './support/system';
import { insertSource } from './events.helpers';
import { Frame, openStream } from './support/sse-stream';

const ids = (frames: Frame[]): string[] => frames.filter((f) => f.data).map((f) => f.id!);

/**
 * EMITS messages holding the events of several invocations (`EmitBatch`), as the api reads them: event streams,
 * range deletes and the back-pressure's count of unrouted events. The api runs in this process, from the sources
 * (no build needed), as the NATS admin user; the router is a durable this test makes and acknowledges itself.
 */
describe('EMITS messages holding several events, as the api reads them', () => {
  let system: System;
  let app: NestFastifyApplication;
  let nc: NatsConnection;
  let names: Names;
  let user: TestUser;
  let other: TestUser;
  let seq = 0;

  beforeAll(async () => {
    // A database and a NATS prefix of its own; no app process.
    system = await startSystem({}, { apps: [] });
    const env: Record<string, string> = {
      ...system.appEnv('api'),
      ...natsAdminEnv(),
      REGISTRY_DIR: 'off',
      // Its sources refer to no component: the reconciler says so at every pass.
      LOG_LEVEL: 'error',
      SSE_KEEPALIVE_MS: '500',
      INGEST_BACKLOG_POLL_MS: '100',
      INGEST_MAX_PENDING: '80',
      INGEST_MAX_PENDING_PER_ACCOUNT: '10',
    };
    delete env.NATS_INBOX_PREFIX;
    app = await createApiApp(loadConfig(env));
    await app.listen(Number(system.env.PORT), '127.0.0.1');
    nc = await connect(natsAdmin());
    names = new Names(system.natsPrefix);
    await (await nc.jetstreamManager()).consumers.add(names.emitsStream, { durable_name: ROUTER_DURABLE, ack_policy: AckPolicy.Explicit, filter_subject: names.allEmits });
    user = createUser(system);
    other = createUser(system);
  });
  afterAll(async () => {
    await nc?.close();
    await app?.close();
    await system?.stop();
  });

  const event = (emitterId: string, ownerId: string, data: unknown, name = ''): EmittedEvent => {
    const now = Date.now();
    return { id: `${now}-${seq++}`, emitterId, ownerId, name, event: data, emitId: `emit_${seq}_${now}`, ts: now, emittedAtMs: now };
  };
  const events = (emitterId: string, ownerId: string, n: number): EmittedEvent[] => Array.from({ length: n }, (_, i) => event(emitterId, ownerId, { i }));
  /** Stores one message of several invocations' events, as the runner does. */
  const storeBatch = (emitterId: string, evs: EmittedEvent[]): Promise<PubAck> => {
    const batch: EmitBatch = { invocations: evs.map((_, i) => `inv_${seq}_${i}`), events: evs };
    return nc.jetstream().publish(names.emit(emitterId), encodeJson(batch), { msgID: `batch_${seq++}` });
  };
  const storeOne = (e: EmittedEvent): Promise<PubAck> => nc.jetstream().publish(names.emit(e.emitterId), encodeJson(e), { msgID: e.emitId });
  /** The router acknowledges every message stored so far. */
  const routeAll = async (): Promise<void> => {
    const consumer = await nc.jetstream().consumers.get(names.emitsStream, ROUTER_DURABLE);
    for (;;) {
      const batch = await consumer.fetch({ max_messages: 500, expires: 1_000 });
      let n = 0;
      for await (const m of batch) {
        n++;
        await m.ackAck();
      }
      if (!n) break;
    }
    const info = await (await nc.jetstreamManager()).consumers.info(names.emitsStream, ROUTER_DURABLE);
    expect(info.num_pending + info.num_ack_pending).toBe(0);
  };
  /** The stream's end now: what a delete request arriving now erases up to. */
  const endOfEmits = async (): Promise<number> => (await (await nc.jetstreamManager()).streams.info(names.emitsStream)).state.last_seq;
  const lastOf = async (emitterId: string) => (await nc.jetstreamManager()).streams.getMessage(names.emitsStream, { last_by_subj: names.emit(emitterId) });
  const stored = async (seqNo: number): Promise<boolean> =>
    (await nc.jetstreamManager()).streams.getMessage(names.emitsStream, { seq: seqNo }).then(
      () => true,
      () => false,
    );

  /** The ids of `among` a stream resumed after `after` replays (all of the replay arrives before a live marker). */
  const replayed = async (src: string, after: string, among: EmittedEvent[]): Promise<string[]> => {
    const stream = await openStream(system, `/sse/dc/${src}/emits`, user.apiKey, after);
    expect(stream.status).toBe(200);
    await eventually(async () => stream.frames[0]?.comment === 'sse-handshake', { what: 'handshake' });
    const marker = event(src, user.id, { marker: true });
    await storeOne(marker);
    await eventually(async () => ids(stream.frames).includes(marker.id), { what: 'the live marker' });
    stream.close();
    const shown = ids(stream.frames);
    // Every event once.
    expect(new Set(shown).size).toBe(shown.length);
    return shown.filter((id) => among.some((e) => e.id === id));
  };
  const before = (e: EmittedEvent): string => `${e.ts - 1}-0`;

  it('streams every event of a message holding several, in order and once, live and resumed with Last-Event-ID', async () => {
    const src = await insertSource(system, user.id);
    const emits = await openStream(system, `/sse/dc/${src}/emits`, user.apiKey);
    const observations = await openStream(system, `/sse/dc/${src}/observations`, user.apiKey);
    await eventually(async () => emits.frames[0]?.comment === 'sse-handshake' && observations.frames[0]?.comment === 'sse-handshake', { what: 'handshakes' });
    const batch = [event(src, user.id, { a: 1 }), event(src, user.id, { msg: 'log' }, '$logs'), event(src, user.id, { b: 2 }, 'custom'), event(src, user.id, { c: 3 })];
    await storeBatch(src, batch);
    const single = event(src, user.id, { d: 4 });
    await storeOne(single);
    const live = [batch[0], batch[2], batch[3], single].map((e) => e.id);
    await eventually(async () => ids(emits.frames).length === 4 && ids(observations.frames).length === 1, { what: 'the live events' });
    expect(ids(emits.frames)).toEqual(live);
    expect(ids(observations.frames)).toEqual([batch[1].id]);
    expect(JSON.parse(emits.frames.find((f) => f.id === batch[2].id)!.data!)).toEqual({ id: batch[2].id, indexed_at_ms: batch[2].emittedAtMs, event: { b: 2 }, metadata: { emit_id: batch[2].emitId, name: 'custom', emitter_id: src } });
    emits.close();
    observations.close();

    // Resumed: from before the message, and from inside it (only the events after the id given).
    expect(await replayed(src, before(batch[0]), [...batch, single])).toEqual(live);
    expect(await replayed(src, batch[0].id, [...batch, single])).toEqual(live.slice(1));
    expect(await replayed(src, batch[2].id, [...batch, single])).toEqual(live.slice(2));
  });

  it('DELETE /sources/{id}/events with a range covering a whole message removes all its events from the replay', async () => {
    const api = client(system, user.apiKey);
    const src = await insertSource(system, user.id);
    const first = event(src, user.id, { first: true });
    await storeOne(first);
    const batch = events(src, user.id, 4);
    const { seq: batchSeq } = await storeBatch(src, batch);
    const last = event(src, user.id, { last: true });
    await storeOne(last);
    const all = [first, ...batch, last];
    expect(await replayed(src, before(first), all)).toEqual(all.map((e) => e.id));

    expect((await api.del(`/sources/${src}/events?start_id=${batch[0].id}&end_id=${batch[3].id}`)).status).toBe(202);
    await eventually(async () => JSON.stringify(await replayed(src, before(first), all)) === JSON.stringify([first.id, last.id]), { what: 'a replay without the message', timeoutMs: 20_000 });
    // Deleted, not stored again: nothing of it was left.
    expect(await stored(batchSeq)).toBe(false);
    expect((await lastOf(src)).json<EmittedEvent>().event).toEqual({ marker: true });
  });

  it('a range ending inside a message removes exactly its events in the range; the others stay, with their ids, after newer ones', async () => {
    const api = client(system, user.apiKey);
    const src = await insertSource(system, user.id);
    const single = event(src, user.id, { single: true });
    await storeOne(single);
    const batch = events(src, user.id, 5);
    const { seq: batchSeq } = await storeBatch(src, batch);
    const newer = event(src, user.id, { newer: true });
    await storeOne(newer);
    const all = [single, ...batch, newer];

    // Not routed yet: the router gets the survivors from their copy.
    expect((await api.del(`/sources/${src}/events?start_id=${single.id}&end_id=${batch[2].id}`)).status).toBe(202);
    const survivors = [batch[3], batch[4]];
    await eventually(async () => !(await stored(batchSeq)), { what: 'the original message deleted', timeoutMs: 20_000 });
    // Stored again before the message was deleted.
    const copy = await lastOf(src);
    expect(copy.json<EmitBatch>()).toEqual({ invocations: [], events: survivors });
    expect(copy.header.get('Nats-Msg-Id')).toBe(`erase:${batchSeq}`);
    expect(copy.header.has(EMITS_ROUTED_HEADER)).toBe(false);
    expect(await replayed(src, before(single), all)).toEqual([newer.id, ...survivors.map((e) => e.id)]);
    // Resumed from a survivor: only what follows it.
    expect(await replayed(src, batch[3].id, all)).toEqual([newer.id, batch[4].id]);
  });

  it("marks the survivors' copy Ess-Routed when the router had acknowledged the message, and counts only the events in the range", async () => {
    const src = await insertSource(system, user.id);
    const batch = events(src, user.id, 6);
    const { seq: batchSeq } = await storeBatch(src, batch);
    await routeAll();
    const eraser = app.get(EmitsEraser);
    // From the second event to the fourth: three of six.
    expect(await eraser.erase(src, await endOfEmits(), parseEventId(batch[1].id), parseEventId(batch[3].id))).toBe(3);
    expect(await stored(batchSeq)).toBe(false);
    const copy = await lastOf(src);
    expect(copy.seq).toBeGreaterThan(batchSeq);
    expect(copy.json<EmitBatch>()).toEqual({ invocations: [], events: [batch[0], batch[4], batch[5]] });
    expect(copy.header.get(EMITS_ROUTED_HEADER)).toBe('1');
    expect(await replayed(src, before(batch[0]), batch)).toEqual([batch[0], batch[4], batch[5]].map((e) => e.id));
    // The copy itself, partly erased again: one event counted, and two left.
    expect(await eraser.erase(src, await endOfEmits(), parseEventId(batch[4].id), parseEventId(batch[4].id))).toBe(1);
    expect(await replayed(src, before(batch[0]), batch)).toEqual([batch[0], batch[5]].map((e) => e.id));
  });

  it('stores the survivors once when a delete is retried after storing them and before deleting the message', async () => {
    const src = await insertSource(system, user.id);
    const batch = events(src, user.id, 4);
    const { seq: batchSeq } = await storeBatch(src, batch);
    // A first attempt stored the copy, then stopped before deleting the message.
    const h = natsHeaders();
    h.set(EMITS_ROUTED_HEADER, '1');
    const { seq: copySeq } = await nc.jetstream().publish(names.emit(src), encodeJson({ invocations: [], events: batch.slice(2) } satisfies EmitBatch), { msgID: `erase:${batchSeq}`, headers: h });
    expect(await app.get(EmitsEraser).erase(src, await endOfEmits(), parseEventId(batch[0].id), parseEventId(batch[1].id))).toBe(2);
    expect(await stored(batchSeq)).toBe(false);
    expect((await lastOf(src)).seq).toBe(copySeq);
    expect(await replayed(src, before(batch[0]), batch)).toEqual([batch[2].id, batch[3].id]);
  });

  it("counts the router's backlog in events, not messages, and attributes it to accounts by their events", async () => {
    const backlog = app.get(InvocationBacklog);
    await routeAll();
    await eventually(async () => backlog.stats.events_unrouted === 0, { what: 'nothing unrouted' });
    const mine = await insertSource(system, user.id);
    const theirs = await insertSource(system, other.id);

    // 40 messages of 5 events: more messages than are sampled.
    for (let i = 0; i < 40; i++) await storeBatch(mine, events(mine, user.id, 5));
    await eventually(async () => backlog.stats.events_unrouted === 200, { what: '200 unrouted events', timeoutMs: 10_000 });
    // 200 events of this account alone reach INGEST_MAX_PENDING (80): it is refused, the other account is not.
    expect(backlog.checkAccount(user.id)).toEqual(expect.objectContaining({ scope: 'account', waiting: 'events', pending: 200, limit: 80 }));
    expect(backlog.checkAccount(other.id)).toBeUndefined();

    // Ten messages each: 90 events of this account, 10 of the other's; weighed by events, only this account reaches 80.
    await routeAll();
    await eventually(async () => backlog.stats.events_unrouted === 0, { what: 'nothing unrouted' });
    for (let i = 0; i < 10; i++) {
      await storeBatch(mine, events(mine, user.id, 9));
      await storeOne(event(theirs, other.id, { i }));
    }
    await eventually(async () => backlog.stats.events_unrouted === 100, { what: '100 unrouted events', timeoutMs: 10_000 });
    await eventually(async () => backlog.checkAccount(user.id)?.pending === 90, { what: "this account's 90 events", timeoutMs: 10_000 });
    expect(backlog.checkAccount(other.id)).toBeUndefined();
    await routeAll();
    await eventually(async () => backlog.stats.events_unrouted === 0 && backlog.checkAccount(user.id) === undefined, { what: 'the backlog routed' });
  });
});
