import { connect, NatsConnection } from 'nats';
import { Names } from '@app/contracts';
import { createUser, TestUser } from './support/accounts';
import { natsAdmin } from './support/env';
import { eventually, startSystem, System } from './support/system';
import { Emitter, insertSource } from './events.helpers';

/**
 * A range deletion reads the source's messages of EMITS from `start_id`'s time and erases those in the range
 * (docs/events.md): every one of them, so a resumed stream never replays a deleted event.
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

  /** Messages the server has sent to the api's scan of the source (its consumer on the source's subject), and those still stored. */
  const progress = async (sourceId: string): Promise<{ delivered: number; stored: number }> => {
    const names = new Names(system.natsPrefix);
    const jsm = await nc.jetstreamManager();
    let delivered = 0;
    for await (const c of jsm.consumers.list(names.emitsStream)) {
      if (c.config.filter_subject === names.emit(sourceId) || c.config.filter_subjects?.includes(names.emit(sourceId))) delivered = Math.max(delivered, c.delivered.consumer_seq);
    }
    const info = await jsm.streams.info(names.emitsStream, { subjects_filter: names.emit(sourceId) });
    return { delivered, stored: info.state.subjects?.[names.emit(sourceId)] ?? 0 };
  };

  it('erases every message of a range, however many fetches its scan takes', async () => {
    // Erasing each message while its fetch was still being read lost the messages that fetch received meanwhile: a
    // range of many messages kept most of them in EMITS (756 of these 1,200), replayed to a resumed stream.
    const src = await insertSource(system, user.id);
    const ids: string[] = [];
    for (let i = 0; i < 1200; i += 100) ids.push(...(await Promise.all(Array.from({ length: 100 }, (_, j) => emitter.emit(src, user.id, { i: i + j })))).map((e) => e.id));
    const res = await fetch(`${system.baseUrl}/sources/${src}/events?start_id=${ids[0]}&end_id=${ids[ids.length - 1]}`, { method: 'DELETE', headers: { authorization: `Bearer ${user.apiKey}` } });
    expect(res.status).toBe(202);
    await eventually(async () => ((await progress(src)).stored === 0 ? true : undefined), { what: 'every message of the range erased', timeoutMs: 30_000 });
  });
});
