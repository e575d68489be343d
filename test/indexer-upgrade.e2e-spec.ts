import { AckPolicy, DeliverPolicy } from 'nats';
import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';
import { Emitter, insertSource } from './events.helpers';

/**
 * Upgrading from a version that indexed through its own consumer (`indexer`):
 * events only that consumer still had pending are indexed, then it is removed.
 */
describe('delivery: the previous indexer consumer is drained and removed', () => {
  let system: System;
  let emitter: Emitter;

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
    emitter = await Emitter.connect(system);
  });
  afterAll(async () => {
    await emitter?.close();
    await system?.stop();
  });

  it('indexes the backlog the old consumer held, which the router had already passed, then deletes that consumer', async () => {
    const jsm = await emitter.nc.jetstreamManager();
    const stream = emitter.names.emitsStream;
    const base = { ack_policy: AckPolicy.Explicit, filter_subject: emitter.names.allEmits };
    // The router is already past these events; only the old indexer has them pending.
    await jsm.consumers.add(stream, { ...base, durable_name: 'router', deliver_policy: DeliverPolicy.New });
    await jsm.consumers.add(stream, { ...base, durable_name: 'indexer', deliver_policy: DeliverPolicy.All });
    const user = createUser(system);
    const src = await insertSource(system, user.id);
    for (let i = 0; i < 3; i++) await emitter.emit(src, user.id, { i });

    await system.startApp('delivery', 'delivery');
    const api = client(system, user.apiKey);
    const summaries = await eventually(async () => {
      const res = await api.get(`/sources/${src}/event_summaries`);
      return res.body.data.length === 3 ? res.body.data : undefined;
    }, { what: 'the 3 events of the old backlog indexed', timeoutMs: 30_000 });
    expect(summaries.map((s: { event: { i: number } }) => s.event.i).sort()).toEqual([0, 1, 2]);
    await eventually(async () => !(await jsm.consumers.list(stream).next()).some((c) => c.name === 'indexer'), { what: 'the indexer consumer removed', timeoutMs: 30_000 });
  });
});
