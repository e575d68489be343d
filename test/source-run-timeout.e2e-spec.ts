import { connect, NatsConnection } from 'nats';
import { natsAdmin } from './support/env';
import { decodeJson, DesiredSourceState, Names, partitionOf } from '@app/contracts';
import { admin, client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/** DESIGN.md limits: the run timeout is RUN_TIMEOUT_MS by default, a per-source setting, capped by MAX_RUN_TIMEOUT_MS. */
const SLOW = `module.exports = {
  name: "Slow", version: "1",
  props: {},
  hooks: { async activate() { console.log("activate"); } },
  async run(event) {
    await new Promise((r) => setTimeout(r, event.ms));
    this.$emit({ slept: event.ms }, { id: String(Date.now()) });
  },
};`;

describe('per-source run timeout (admin sources set-timeout)', () => {
  let system: System;
  let user: TestUser;
  let nc: NatsConnection;

  beforeAll(async () => {
    system = await startSystem({ RUN_TIMEOUT_MS: '1000', MAX_RUN_TIMEOUT_MS: '6000', RECONCILE_INTERVAL_MS: '300' });
    user = createUser(system);
    nc = await connect(natsAdmin());
  });
  afterAll(async () => {
    await nc?.close();
    await system?.stop();
  });

  const api = () => client(system, user.apiKey);
  const events = async (id: string, name: string): Promise<{ event: Record<string, unknown> }[]> =>
    (await api().get(`/sources/${id}/event_summaries?limit=100&expand=event&event_name=${encodeURIComponent(name)}`)).body?.data ?? [];
  const desired = async (id: string): Promise<DesiredSourceState | undefined> => {
    const names = new Names(system.natsPrefix);
    const kv = await nc.jetstream().views.kv(names.sourcesBucket);
    const e = await kv.get(names.sourceKey(partitionOf(id, Number(system.env.PARTITIONS)), id));
    return e && e.operation === 'PUT' ? decodeJson<DesiredSourceState>(e.value) : undefined;
  };

  it('runs a source under its own timeout once the operator sets one, capped by MAX_RUN_TIMEOUT_MS', async () => {
    const created = await api().post('/sources', { component_code: SLOW });
    expect(created.status).toBe(200);
    const id: string = created.body.data.id;
    await eventually(async () => (await events(id, '$logs')).length === 1, { what: 'activate' });

    // The installation default (1 s) stops a 2.5 s run.
    expect((await api().post(`/sources/${id}/run`, { event: { ms: 2500 } })).status).toBe(202);
    const [err] = await eventually(async () => {
      const e = await events(id, '$errors');
      return e.length ? e : undefined;
    }, { what: 'the timeout' });
    expect(err.event).toMatchObject({ error: { name: 'TimeoutError' } });

    expect(admin(system, ['sources', 'set-timeout', '--source', id, '--seconds', '4'])).toEqual({ id, run_timeout_ms: 4000 });
    await eventually(async () => (await desired(id))?.runTimeoutMs === 4000, { what: 'the new timeout published' });
    await eventually(async () => (await events(id, '$logs')).length === 2, { what: 'the update applied (activate again)' });
    expect((await api().post(`/sources/${id}/run`, { event: { ms: 2500 } })).status).toBe(202);
    const [ok] = await eventually(async () => {
      const e = await events(id, '');
      return e.length ? e : undefined;
    }, { what: 'the slow run emits' });
    expect(ok.event).toEqual({ slept: 2500 });

    // Above the operator's cap: the cap applies. "default" goes back to RUN_TIMEOUT_MS.
    admin(system, ['sources', 'set-timeout', '--source', id, '--seconds', '60']);
    await eventually(async () => (await desired(id))?.runTimeoutMs === 6000, { what: 'the capped timeout published' });
    expect(admin(system, ['sources', 'set-timeout', '--source', id, '--seconds', 'default'])).toEqual({ id, run_timeout_ms: null });
    await eventually(async () => (await desired(id))?.runTimeoutMs === 1000, { what: 'the default timeout published' });

    expect(() => admin(system, ['sources', 'set-timeout', '--source', id, '--seconds', '0'])).toThrow(/--seconds must be a whole number/);
    expect(() => admin(system, ['sources', 'set-timeout', '--source', 'dc_nope', '--seconds', '5'])).toThrow(/source dc_nope not found/);
  });
});
