import { encodeJson, Names, UsageRecord } from '@app/contracts';
import { client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { Emitter, sql } from './events.helpers';

describe('delivery app: usage counting', () => {
  let system: System;
  let emitter: Emitter;

  beforeAll(async () => {
    system = await startSystem({ DELIVERY_METRICS_PORT: String(await freePort()) }, { apps: ['api', 'delivery'] });
    emitter = await Emitter.connect(system);
  });
  afterAll(async () => {
    await emitter?.close();
    await system?.stop();
  });

  it('counts an invocation once when its usage record reaches the delivery app again', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const names = new Names(system.natsPrefix);
    const js = emitter.nc.jetstream();
    const record = (invocationId: string, computeMs: number): UsageRecord => ({ ownerId: user.id, sourceId: 'dc_usage', invocationId, computeMs, finishedAtMs: Date.now() });
    // Distinct Nats-Msg-Ids: the stream keeps every copy, as it does for a redelivery after a lost ack
    // or a record published again outside the duplicate window.
    const publish = (r: UsageRecord, msgID: string): Promise<unknown> => js.publish(names.usage(user.id), encodeJson(r), { msgID });
    const used = async (): Promise<{ invocations: number; computeMs: number }> => {
      const me = (await api.get('/users/me')).body.data;
      return { invocations: me.daily_invocations_used, computeMs: me.daily_compute_time_used };
    };

    await publish(record('inv_a', 10), 'a-1');
    await publish(record('inv_a', 10), 'a-2');
    // Another copy in a later batch, then a new invocation whose compute time marks when all of them were handled (in order).
    await eventually(async () => (await used()).invocations >= 1, { what: 'the first invocation counted' });
    await publish(record('inv_a', 10), 'a-3');
    await publish(record('inv_b', 1000), 'b-1');
    await eventually(async () => (await used()).computeMs >= 1000, { what: 'the second invocation counted' });
    expect(await used()).toEqual({ invocations: 2, computeMs: 1010 });

    // The memory of counted records is dropped once nothing can be redelivered.
    await eventually(async () => (await sql<{ n: number }>(system, 'select count(*)::int as n from usage_seen'))[0].n === 0, { what: 'usage_seen pruned' });
  });
});
