import { connect, NatsConnection, ObjectStore } from 'nats';
import { natsAdmin } from './support/env';
import { Names, sha256Hex } from '@app/contracts';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';

/**
 * Component code garbage collection: objects in the `components` store that no
 * source's desired state references go once they are older than the grace period;
 * code in use stays, and a runner started afterwards still loads it.
 */
const GRACE_MS = 4000;
const codeOf = (v: string): string => `module.exports = { name: "Gc ${v}", version: "1", async run(event) { this.$emit({ v: ${JSON.stringify(v)}, n: event.n }); } };`;

type Health = { status: string; registry: string; component_gc: { rounds: number; removed: number; restored: number; grace_ms: number } };

describe('component code garbage collection', () => {
  let system: System;
  let user: TestUser;
  let nc: NatsConnection;
  let os: ObjectStore;

  beforeAll(async () => {
    system = await startSystem({ COMPONENT_GC_INTERVAL_MS: '300', COMPONENT_GC_GRACE_MS: String(GRACE_MS), REGISTRY_DIR: 'off' });
    user = createUser(system);
    nc = await connect(natsAdmin());
    os = await nc.jetstream().views.os(new Names(system.natsPrefix).componentsStore);
  });
  afterAll(async () => {
    await nc?.close();
    await system?.stop();
  });

  const api = () => client(system, user.apiKey);
  const health = async (): Promise<Health> => (await fetch(`${system.origin}/healthz`).then((r) => r.json())) as Health;
  const stored = async (hash: string): Promise<{ mtime: number } | null> => {
    const info = await os.info(hash);
    return info && !info.deleted ? { mtime: Date.parse(info.mtime) } : null;
  };
  const emitted = async (sourceId: string, n: number): Promise<Record<string, unknown>> =>
    eventually(
      async () => {
        const res = await api().get(`/sources/${sourceId}/event_summaries?limit=100&expand=event`);
        return (res.body?.data as { event: Record<string, unknown> }[] | undefined)?.find((s) => s.event.n === n)?.event;
      },
      { timeoutMs: 30_000, what: `event ${n} of ${sourceId}` },
    );
  const run = async (sourceId: string, n: number): Promise<void> => {
    expect((await api().post(`/sources/${sourceId}/run`, { event: { n } })).status).toBe(202);
  };

  it('removes only unreferenced code past the grace period; code in use survives a runner restart', async () => {
    const [a, b, c, d] = ['A', 'B', 'C', 'D'].map(codeOf);
    const [hashA, hashB, hashC, hashD] = [a, b, c, d].map(sha256Hex);

    const s1 = (await api().post('/sources', { component_code: a })).body.data.id as string;
    const s2 = (await api().post('/sources', { component_code: b })).body.data.id as string;
    await run(s1, 1);
    expect(await emitted(s1, 1)).toEqual({ v: 'A', n: 1 });
    expect((await api().put(`/sources/${s1}`, { component_code: c })).status).toBe(200);
    expect((await api().del(`/sources/${s2}`)).status).toBe(204);
    // Saved but never used by a source.
    expect((await api().post('/components', { component_code: d })).status).toBe(200);

    const storedAt: Record<string, number> = {};
    for (const h of [hashA, hashB, hashC, hashD]) storedAt[h] = (await stored(h))!.mtime;

    // The orphans go, but never before the grace period since they were stored.
    const goneAt: Record<string, number> = {};
    await eventually(
      async () => {
        for (const h of [hashA, hashB, hashD]) if (!goneAt[h] && !(await stored(h))) goneAt[h] = Date.now();
        return Object.keys(goneAt).length === 3;
      },
      { timeoutMs: 30_000, intervalMs: 50, what: 'unreferenced code removed' },
    );
    for (const h of [hashA, hashB, hashD]) expect(goneAt[h] - storedAt[h]).toBeGreaterThanOrEqual(GRACE_MS);

    // The code in use stays, through later rounds (it is now past the grace period too).
    const rounds = (await health()).component_gc.rounds;
    await eventually(async () => (await health()).component_gc.rounds >= rounds + 2, { what: 'two more gc rounds' });
    expect(Date.now() - storedAt[hashC]).toBeGreaterThanOrEqual(GRACE_MS);
    expect(await stored(hashC)).not.toBeNull();
    const h = await health();
    expect(h.status).toBe('ok');
    expect(h.component_gc.removed).toBeGreaterThanOrEqual(3);

    // A fresh runner loads the live source's code from the store.
    await system.stopApp('runner');
    await system.startApp('runner', 'runner2');
    await run(s1, 2);
    expect(await emitted(s1, 2)).toEqual({ v: 'C', n: 2 });

    // Removed code used again is stored again (and runs).
    const s3 = (await api().post('/sources', { component_code: a })).body.data.id as string;
    expect(await stored(hashA)).not.toBeNull();
    await run(s3, 3);
    expect(await emitted(s3, 3)).toEqual({ v: 'A', n: 3 });
  });
});

describe('component code garbage collection with two api replicas', () => {
  let system: System;
  let port2: number;

  beforeAll(async () => {
    system = await startSystem({ COMPONENT_GC_INTERVAL_MS: '200', COMPONENT_GC_GRACE_MS: '1000', REGISTRY_DIR: 'off', LOG_LEVEL: 'info' }, { apps: ['api'] });
    port2 = await freePort();
    await system.startApp('api', 'api2', { PORT: String(port2), PUBLIC_URL: `http://127.0.0.1:${port2}` });
    await eventually(async () => (await fetch(`http://127.0.0.1:${port2}/healthz`).catch(() => undefined))?.ok, { what: 'second api replica' });
  });
  afterAll(async () => system?.stop());

  const slotsOf = (name: string): number[] => [...system.logs(name).matchAll(/component gc round slot=(\d+)/g)].map((m) => Number(m[1]));
  const rounds = async (url: string): Promise<number> => ((await fetch(`${url}/healthz`).then((r) => r.json())) as Health).component_gc.rounds;

  it('runs each round on one replica only', async () => {
    await eventually(async () => slotsOf('api').length + slotsOf('api2').length >= 8, { what: '8 gc rounds', timeoutMs: 30_000 });
    const [one, two] = [slotsOf('api'), slotsOf('api2')];
    expect(new Set(one).size).toBe(one.length);
    expect(new Set(two).size).toBe(two.length);
    expect(one.filter((s) => two.includes(s))).toEqual([]);
    expect((await rounds(system.origin)) + (await rounds(`http://127.0.0.1:${port2}`))).toBeGreaterThanOrEqual(8);
  });
});
