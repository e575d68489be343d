import { randomBytes } from 'node:crypto';
import { headers as natsHeaders } from 'nats';
import { EmitBatch, EmittedEvent, EMITS_ROUTED_HEADER, encodeJson, ROUTER_DURABLE } from '@app/contracts';
import { client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { Emitter, insertSource, Receiver, subscriptionsLoaded } from './events.helpers';

/**
 * An EMITS message may hold the events of several invocations (an `EmitBatch`): delivery indexes every one
 * of its events and POSTs each to the subscribed webhooks, once and in order; a copy a range delete
 * republished (`Ess-Routed`) is neither indexed nor delivered again. Batches are published straight to EMITS,
 * as the runner stores them. One request slot per webhook, so the POSTs arrive in the order they were routed.
 */
describe('delivery: EMITS messages holding several events', () => {
  let system: System;
  let emitter: Emitter;
  let seq = 0;

  beforeAll(async () => {
    system = await startSystem({ WEBHOOK_CONCURRENCY: '1', DELIVERY_METRICS_PORT: String(await freePort()) }, { apps: ['api', 'delivery'] });
    emitter = await Emitter.connect(system);
  });
  afterAll(async () => {
    await emitter?.close();
    await system?.stop();
  });

  /** A fresh `<epoch_ms>-<sequence>` event id, after every earlier one (so the listing's order is the emit order). */
  const nextId = (): string => `${Date.now()}-${seq++}`;
  /** An event as the runner emits it. */
  const eventOf = (emitterId: string, ownerId: string, data: unknown, id = nextId()): EmittedEvent => {
    const now = Date.now();
    return { id, emitterId, ownerId, name: '', event: data, emitId: `emit_${randomBytes(8).toString('hex')}`, ts: now, emittedAtMs: now };
  };

  /** Publishes one EMITS message: a batch of `events`, or the one event; `routed` marks it a range delete's copy of a message already routed. */
  const publish = async (events: EmittedEvent[], opts: { routed?: boolean; single?: boolean } = {}): Promise<void> => {
    const invocation = `inv_${randomBytes(8).toString('hex')}`;
    const batch: EmitBatch = { invocations: [invocation, `${invocation}b`], events };
    const h = natsHeaders();
    if (opts.routed) h.set(EMITS_ROUTED_HEADER, '1');
    const [data, msgID] = opts.single ? [encodeJson(events[0]), events[0].emitId] : [encodeJson(batch), `${invocation}:p0`];
    await emitter.nc.jetstream().publish(emitter.names.emit(events[0].emitterId), data, { msgID, headers: h });
  };

  /** A source of a new user, subscribed to a webhook to a new receiver, once delivery has loaded the route. */
  const subscribed = async (): Promise<{ src: string; owner: string; receiver: Receiver; listed: () => Promise<{ id: string; event: unknown }[]> }> => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const src = await insertSource(system, user.id);
    const receiver = await new Receiver().start();
    const wh = (await api.post('/webhooks', { url: receiver.url })).body.data.id;
    expect((await api.post('/subscriptions', { emitter_id: src, listener_id: wh })).status).toBe(200);
    await subscriptionsLoaded(system);
    // Newest first; oldest first here, as emitted.
    const listed = async () => ((await api.get(`/sources/${src}/event_summaries?limit=100&expand=event`)).body.data ?? []).reverse();
    return { src, owner: user.id, receiver, listed };
  };

  /** What the receiver got: each POST's event id and body, in arrival order. */
  const posts = (receiver: Receiver): { id: string; body: unknown }[] => receiver.received.map((r) => ({ id: String(r.headers['x-pd-event-id']), body: JSON.parse(r.body) }));

  /** Waits until the receiver got the event `last` (routed after everything published before it) and it is indexed. */
  const settledThrough = async (last: EmittedEvent, receiver: Receiver, listed: () => Promise<{ id: string }[]>): Promise<void> => {
    await eventually(async () => receiver.eventIds().has(last.id), { what: `event ${last.id} delivered` });
    await eventually(async () => (await listed()).some((e) => e.id === last.id), { what: `event ${last.id} indexed` });
  };

  it('indexes every event of a batch and POSTs each once, in order; a single-event message still works', async () => {
    const { src, owner, receiver, listed } = await subscribed();
    try {
      const batch = [0, 1, 2, 3, 4].map((i) => eventOf(src, owner, { i }));
      await publish(batch);
      const single = await emitter.emit(src, owner, { i: 5 }, { id: nextId() });
      const second = [6, 7].map((i) => eventOf(src, owner, { i }));
      await publish(second);
      const last = await emitter.emit(src, owner, { i: 8 }, { id: nextId() });
      await settledThrough(last, receiver, listed);

      const expected = [...batch, single, ...second, last].map((e) => ({ id: e.id, body: e.event }));
      expect(posts(receiver)).toEqual(expected);
      expect((await listed()).map((e) => ({ id: e.id, body: e.event }))).toEqual(expected);
    } finally {
      await receiver.stop();
    }
  });

  it('neither indexes nor delivers a batch or an event republished by a range delete (Ess-Routed), and acknowledges them', async () => {
    const { src, owner, receiver, listed } = await subscribed();
    try {
      const first = await emitter.emit(src, owner, { i: 0 }, { id: nextId() });
      await publish([1, 2, 3].map((i) => eventOf(src, owner, { i })), { routed: true });
      await publish([eventOf(src, owner, { i: 4 })], { routed: true, single: true });
      const last = await emitter.emit(src, owner, { i: 5 }, { id: nextId() });
      await settledThrough(last, receiver, listed);

      expect(posts(receiver)).toEqual([first, last].map((e) => ({ id: e.id, body: e.event })));
      expect((await listed()).map((e) => e.id)).toEqual([first.id, last.id]);
      // Nothing left for the router: the copy was acknowledged, not left to be redelivered.
      await eventually(async () => {
        const info = await emitter.nc.jetstreamManager().then((jsm) => jsm.consumers.info(emitter.names.emitsStream, ROUTER_DURABLE));
        return info.num_pending === 0 && info.num_ack_pending === 0 && info.num_redelivered === 0;
      }, { what: 'the router to have acknowledged every message' });
    } finally {
      await receiver.stop();
    }
  });

  it('still indexes and delivers the other events of a batch when one event id is malformed', async () => {
    const { src, owner, receiver, listed } = await subscribed();
    try {
      const good = [0, 1].map((i) => eventOf(src, owner, { i }));
      const bad = eventOf(src, owner, { i: 'bad' }, 'not-an-event-id');
      const after = eventOf(src, owner, { i: 2 });
      await publish([good[0], bad, good[1], after]);
      const last = await emitter.emit(src, owner, { i: 3 }, { id: nextId() });
      await settledThrough(last, receiver, listed);

      const expected = [...good, after, last].map((e) => ({ id: e.id, body: e.event }));
      expect(posts(receiver)).toEqual(expected);
      expect((await listed()).map((e) => ({ id: e.id, body: e.event }))).toEqual(expected);
    } finally {
      await receiver.stop();
    }
  });
});
