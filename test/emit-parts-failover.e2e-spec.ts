import { connect, NatsConnection } from 'nats';
import { encodeJson, InvocationMessage, Names, partitionOf } from '@app/contracts';
import { client, createUser, TestUser } from './support/accounts';
import { natsAdmin } from './support/env';
import { eventually, freePort, startSystem, System } from './support/system';

/**
 * The events of a message of several requests are stored as parts (docs/architecture.md, "Events stored
 * together"). A runner killed after storing some parts of a message and before its acknowledgement leaves the
 * message to the other replica, which runs all of it again: it finds the parts stored, reads them back, and stores
 * only the rest — every request's event once.
 */
const SLOW_COUNTER = `module.exports = {
  name: "Slow counter", version: "1",
  async run(event) {
    if (event.sleepMs) await new Promise((r) => setTimeout(r, event.sleepMs));
    this.$emit({ n: event.n });
  },
};`;

const PARTITIONS = 8;

describe('events stored together, across a runner crash', () => {
  let system: System;
  let user: TestUser;
  let nc: NatsConnection;
  const ports: Record<string, number> = {};

  const startRunner = async (name: string): Promise<void> => {
    ports[name] = await freePort();
    // One invocation per sandbox task: a message of four runs as four tasks, so it is stored as four parts.
    await system.startApp('runner', name, { RUNNER_METRICS_PORT: String(ports[name]), RUNNER_REPLICA_ID: name, RUN_BATCH_MAX_INVOCATIONS: '1' });
  };
  const partitionsOf = async (name: string): Promise<number[] | undefined> => {
    const r = await fetch(`http://127.0.0.1:${ports[name]}/healthz`).catch(() => undefined);
    return r?.ok ? ((await r.json()) as { partitions: number[] }).partitions : undefined;
  };
  const readBack = async (name: string): Promise<number> => {
    const text = await (await fetch(`http://127.0.0.1:${ports[name]}/metrics`)).text();
    return Number(/^runner_emit_parts_read_back_total (\d+)/m.exec(text)?.[1] ?? 0);
  };

  beforeAll(async () => {
    system = await startSystem({ LEASE_TTL_MS: '3000', INVOCATION_ACK_WAIT_MS: '3000', PARTITIONS: String(PARTITIONS) }, { apps: ['api', 'delivery'] });
    user = createUser(system);
    await startRunner('runnerA');
    await startRunner('runnerB');
    nc = await connect(natsAdmin());
  });
  afterAll(async () => {
    await nc?.close();
    await system?.stop();
  });

  const api = () => client(system, user.apiKey);
  const events = async (sourceId: string): Promise<number[]> => {
    const res = await api().get(`/sources/${sourceId}/event_summaries?limit=100&expand=event`);
    return ((res.body?.data ?? []) as { event: { n: number } }[]).map((s) => s.event.n).sort((a, b) => a - b);
  };

  it('stores every event of a message once when the runner dies between its parts', async () => {
    await eventually(async () => (await partitionsOf('runnerA'))?.length === 4 && (await partitionsOf('runnerB'))?.length === 4, { what: 'an even split of the partitions', timeoutMs: 20_000 });
    const onB = new Set(await partitionsOf('runnerB'));
    let sourceId = '';
    for (let i = 0; i < 30 && !sourceId; i++) {
      const id = (await api().post('/sources', { component_code: SLOW_COUNTER, name: `slow ${i}` })).body.data.id as string;
      if (onB.has(partitionOf(id, PARTITIONS))) sourceId = id;
      else await api().del(`/sources/${id}`);
    }
    expect(sourceId).not.toBe('');
    // The source is deployed on runner B once a run of it is indexed.
    expect((await api().post(`/sources/${sourceId}/run`, { event: { n: -1 } })).status).toBe(202);
    await eventually(async () => (await events(sourceId)).includes(-1), { what: 'the source running on runner B' });

    // Four requests stored as one message, as the api stores requests that arrive together; the last runs for 6 s.
    const invocations: InvocationMessage[] = [0, 1, 2, 3].map((n) => ({
      invocationId: `inv_parts_${sourceId}_${n}`,
      sourceId,
      kind: 'manual',
      event: { n, ...(n === 3 ? { sleepMs: 6_000 } : {}) },
      createdAtMs: Date.now(),
    }));
    const names = new Names(system.natsPrefix);
    await nc.jetstream().publish(names.invocation(partitionOf(sourceId, PARTITIONS), sourceId), encodeJson(invocations), { msgID: invocations[0].invocationId });

    // The first three tasks' parts are stored (their events are indexed); runner B dies while the last task runs.
    await eventually(async () => (await events(sourceId)).filter((n) => n >= 0).length === 3, { what: 'three parts stored' });
    await system.stopApp('runnerB', 'SIGKILL');

    await eventually(async () => (await events(sourceId)).filter((n) => n >= 0).length >= 4, { what: 'the rest stored by runner A', timeoutMs: 40_000 });
    // Nothing more arrives: runner A ran all four again, found the three parts runner B stored, and stored the fourth.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await events(sourceId)).toEqual([-1, 0, 1, 2, 3]);
    expect(await readBack('runnerA')).toBe(3);
  });
});
