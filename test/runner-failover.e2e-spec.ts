import { partitionOf } from '@app/contracts';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';

/**
 * Two runner replicas share the partitions; one is killed with SIGKILL in the
 * middle of a burst. The survivor takes every partition within the lease TTL
 * plus a few seconds, every invocation is processed exactly once (JetStream
 * redelivery + emit ids), no hook runs twice, timers go on, and a replica that
 * joins later takes its share back.
 */
const COUNTER = `module.exports = {
  name: "Counter", version: "1",
  hooks: { async deploy() { console.log("deploy"); }, async activate() { console.log("activate"); } },
  async run(event) { this.$emit({ n: event.n }); },
};`;

const TIMER = `module.exports = {
  name: "Ticker", version: "1",
  props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 1 } } },
  async run(event) { this.$emit(event); },
};`;

type Health = { partitions: number[]; replicas: number };

describe('runner failover', () => {
  let system: System;
  let user: TestUser;
  const ports: Record<string, number> = {};

  const startRunner = async (name: string): Promise<void> => {
    ports[name] = await freePort();
    await system.startApp('runner', name, { RUNNER_METRICS_PORT: String(ports[name]), RUNNER_REPLICA_ID: name });
  };
  const health = async (name: string): Promise<Health | undefined> => {
    const r = await fetch(`http://127.0.0.1:${ports[name]}/healthz`).catch(() => undefined);
    return r?.ok ? ((await r.json()) as Health) : undefined;
  };

  beforeAll(async () => {
    system = await startSystem({ TIMER_MIN_INTERVAL_SECONDS: '1', LEASE_TTL_MS: '3000', INVOCATION_ACK_WAIT_MS: '3000', PARTITIONS: '8' }, { apps: ['api', 'delivery'] });
    user = createUser(system);
    await startRunner('runnerA');
    await startRunner('runnerB');
  });
  afterAll(async () => system?.stop());

  const api = () => client(system, user.apiKey);
  type Summary = { id: string; event: Record<string, unknown> };
  const summaries = async (sourceId: string, eventName: string): Promise<Summary[]> => {
    const res = await api().get(`/sources/${sourceId}/event_summaries?limit=100&expand=event&event_name=${encodeURIComponent(eventName)}`);
    return (res.body?.data ?? []) as Summary[];
  };

  it('survives kill -9 of a replica without losing or duplicating work', async () => {
    await eventually(async () => (await health('runnerA'))?.partitions.length === 4 && (await health('runnerB'))?.partitions.length === 4, { what: 'an even split of 8 partitions', timeoutMs: 20_000 });

    // Sources on both replicas, and the timer on the one that will be killed.
    const onB = new Set((await health('runnerB'))?.partitions);
    const isOnB = (id: string) => onB.has(partitionOf(id, 8));
    const sources: string[] = [];
    for (let i = 0; i < 40 && (sources.length < 6 || sources.filter(isOnB).length < 2 || sources.filter(isOnB).length === sources.length); i++) {
      sources.push((await api().post('/sources', { component_code: COUNTER, name: `counter ${i}` })).body.data.id);
    }
    expect(sources.filter(isOnB).length).toBeGreaterThanOrEqual(2);
    let timer = '';
    for (let i = 0; i < 30 && !timer; i++) {
      const id = (await api().post('/sources', { component_code: TIMER, configured_props: { timer: { intervalSeconds: 1 } } })).body.data.id as string;
      if (isOnB(id)) timer = id;
      else await api().del(`/sources/${id}`);
    }
    expect(timer).not.toBe('');
    for (const id of sources) await eventually(async () => (await summaries(id, '$logs')).length === 2, { what: `hooks of ${id}` });
    await eventually(async () => (await summaries(timer, '')).length >= 2, { what: 'timer running' });

    const RUNS = 15;
    const send = async (from: number, to: number) => {
      for (let n = from; n < to; n++) for (const id of sources) expect((await api().post(`/sources/${id}/run`, { event: { n } })).status).toBe(202);
    };
    await send(0, 8);
    await system.stopApp('runnerB', 'SIGKILL');
    await send(8, RUNS);

    await eventually(async () => (await health('runnerA'))?.partitions.length === 8, { what: 'the survivor owning all partitions', timeoutMs: 3000 + 10_000 });

    for (const id of sources) {
      const got = await eventually(
        async () => {
          const list = await summaries(id, '');
          return list.length >= RUNS ? list : undefined;
        },
        { what: `all ${RUNS} runs of ${id}`, timeoutMs: 30_000 },
      );
      expect(got.map((s) => s.event.n as number).sort((a, b) => a - b)).toEqual(Array.from({ length: RUNS }, (_, n) => n));
      // No hook ran twice.
      expect((await summaries(id, '$logs')).map((s) => s.event.msg).sort()).toEqual(['activate', 'deploy']);
    }

    // Timers go on after the failover, each slot once.
    const before = (await summaries(timer, '')).length;
    await eventually(async () => (await summaries(timer, '')).length >= before + 2, { what: 'timer firing after failover' });
    const stamps = (await summaries(timer, '')).map((s) => s.event.timestamp);
    expect(new Set(stamps).size).toBe(stamps.length);

    // A replica that joins takes its share back.
    await startRunner('runnerC');
    await eventually(async () => (await health('runnerC'))?.partitions.length === 4 && (await health('runnerA'))?.partitions.length === 4, { what: 'rebalancing to the new replica', timeoutMs: 20_000 });
    const id = sources[0];
    expect((await api().post(`/sources/${id}/run`, { event: { n: 99 } })).status).toBe(202);
    await eventually(async () => (await summaries(id, '')).some((s) => s.event.n === 99), { what: 'a run after rebalancing' });
  });
});
