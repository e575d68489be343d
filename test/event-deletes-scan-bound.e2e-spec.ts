import { connect, NatsConnection } from 'nats';
import { Names, readEmits } from '@app/contracts';
import { BATCH_BYTES } from '@app/nats';
import { createUser, TestUser } from './support/accounts';
import { natsAdmin } from './support/env';
import { emitsConsumersOf } from './support/emits-consumers';
import { eventually, startSystem, System } from './support/system';
import { Emitter, insertSource } from './events.helpers';

/** Events of about 100 KB: 400 of them are 40 MB (the test systems' EMITS holds 64 MiB). */
const PAD = 'x'.repeat(100_000);
const EVENTS = 400;

/**
 * A range deletion reads the source's messages of EMITS from `start_id`'s time and erases those in the range
 * (docs/events.md): every one of them and no other, so a resumed stream never replays a deleted event, holding little
 * of the api meanwhile. It took them 500 at a time whatever they weighed: at NATS's largest message (1 MiB, runs stored
 * together) that was 500 MB of the api's memory at once for each account deleting, sent faster than the api erased
 * them. Then 2 at a time (2 MiB at the largest), slow for small ones (600 fetches for 1,200). Now each fetch takes
 * what 2 MiB holds of the messages as they are (BATCH_BYTES, counted by the server), the next once it has erased them.
 */
describe('DELETE /sources/{id}/events: the scan of EMITS', () => {
  let system: System;
  let emitter: Emitter;
  let user: TestUser;
  let nc: NatsConnection;

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
    emitter = await Emitter.connect(system);
    user = createUser(system);
    nc = await connect(natsAdmin());
  });
  afterAll(async () => {
    await nc?.close();
    await emitter?.close();
    await system?.stop();
  });

  /** Messages the server has sent to the api's scan of the source (its consumer on the source's subject), and the messages stored. */
  const progress = async (sourceId: string): Promise<{ delivered: number; stored: number }> => {
    const delivered = Math.max(0, ...(await emitsConsumersOf(system, sourceId, nc)).map((c) => c.delivered.consumer_seq));
    // Each test erases every event it emitted: the stream holds only the running test's.
    return { delivered, stored: (await (await nc.jetstreamManager()).streams.info(new Names(system.natsPrefix).emitsStream)).state.messages };
  };

  /** The ids of the events of the source's messages still in EMITS. */
  const storedIds = async (sourceId: string): Promise<string[]> => {
    const names = new Names(system.natsPrefix);
    const consumer = await nc.jetstream().consumers.get(names.emitsStream, { filterSubjects: names.emit(sourceId) });
    const ids: string[] = [];
    for await (const m of await consumer.fetch({ max_messages: 100, expires: 1_000 })) {
      ids.push(...(readEmits(m.data) ?? []).map((e) => e.id));
      if (m.info.pending === 0) break;
    }
    await consumer.delete();
    return ids;
  };

  it('erases every message of a range, however many fetches its scan takes, and none outside it', async () => {
    // Erasing each message while its fetch was still being read lost the messages that fetch received meanwhile: a
    // range of many messages kept most of them in EMITS (756 of these 1,200), replayed to a resumed stream.
    const src = await insertSource(system, user.id);
    const before = await emitter.emit(src, user.id, { i: -1 });
    const ids: string[] = [];
    for (let i = 0; i < 1200; i += 100) ids.push(...(await Promise.all(Array.from({ length: 100 }, (_, j) => emitter.emit(src, user.id, { i: i + j })))).map((e) => e.id));
    const after = await emitter.emit(src, user.id, { i: 1200 });
    const res = await fetch(`${system.baseUrl}/sources/${src}/events?start_id=${ids[0]}&end_id=${ids[ids.length - 1]}`, { method: 'DELETE', headers: { authorization: `Bearer ${user.apiKey}` } });
    expect(res.status).toBe(202);
    // A dozen fetches and 1,200 deletes: about a second on a quiet machine, longer on a loaded one.
    await eventually(async () => ((await progress(src)).stored === 2 ? true : undefined), { what: 'every message of the range erased', timeoutMs: 60_000 });
    expect(await storedIds(src)).toEqual([before.id, after.id]);
    // The scan's consumer goes with it (it stayed on the server for its 5 minutes of inactivity).
    await eventually(async () => ((await emitsConsumersOf(system, src, nc)).length === 0 ? true : undefined), { what: "the scan's consumer deleted" });

    const del = await fetch(`${system.baseUrl}/sources/${src}/events`, { method: 'DELETE', headers: { authorization: `Bearer ${user.apiKey}` } });
    expect(del.status).toBe(202);
    await eventually(async () => ((await progress(src)).stored === 0 ? true : undefined), { what: 'the events outside the range erased', timeoutMs: 60_000 });
  });

  it('is sent at most BATCH_BYTES (2 MiB) of messages ahead of those it has erased', async () => {
    const src = await insertSource(system, user.id);
    const ids: string[] = [];
    for (let i = 0; i < EVENTS; i += 20) ids.push(...(await Promise.all(Array.from({ length: 20 }, (_, j) => emitter.emit(src, user.id, { i: i + j, pad: PAD })))).map((e) => e.id));
    expect((await progress(src)).stored).toBe(EVENTS);

    const del = (query: string): Promise<Response> => fetch(`${system.baseUrl}/sources/${src}/events?${query}`, { method: 'DELETE', headers: { authorization: `Bearer ${user.apiKey}` } });
    expect((await del(`start_id=${ids[0]}&end_id=${ids[EVENTS - 2]}`)).status).toBe(202);
    // Until every message is erased: how far ahead of the erasing the server's deliveries to the api ever were.
    let ahead = 0;
    let p = await progress(src);
    for (const until = Date.now() + 60_000; p.stored > 1 && Date.now() < until; p = await progress(src)) ahead = Math.max(ahead, p.delivered - (EVENTS - p.stored));
    expect(p.stored).toBe(1);
    // 2 MiB is 20 of these messages; one more may be on its way as the counts are read (500 at a time: 399).
    expect(ahead).toBeLessThanOrEqual(Math.floor(BATCH_BYTES / PAD.length) + 1);

    // The event left (after the range) is erased by a range of its own.
    expect((await del(`start_id=${ids[EVENTS - 1]}&end_id=${ids[EVENTS - 1]}`)).status).toBe(202);
    await eventually(async () => ((await progress(src)).stored === 0 ? true : undefined), { what: 'the last event erased' });
  });
});
