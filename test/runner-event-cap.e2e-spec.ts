import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/** DESIGN.md: each limit breach is a clear error, never a crash; an event cap above what NATS carries is lowered to fit. */
const BIG = `module.exports = {
  name: "Big emitter", version: "1",
  props: {},
  async run(event) {
    this.$emit({ blob: "x".repeat(event.bytes) });
    this.$emit({ small: true });
  },
};`;

describe('EVENT_MAX_BYTES above the NATS server max_payload', () => {
  let system: System;
  let user: TestUser;

  beforeAll(async () => {
    system = await startSystem({ EVENT_MAX_BYTES: String(8 * 1024 * 1024) });
    user = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('an event too big for one NATS message is an EventSizeLimitError $errors event, and the source keeps working', async () => {
    const api = client(system, user.apiKey);
    const created = await api.post('/sources', { component_code: BIG });
    expect(created.status).toBe(200);
    const id: string = created.body.data.id;
    const events = async (name: string): Promise<{ event: Record<string, any> }[]> => // eslint-disable-line @typescript-eslint/no-explicit-any
      (await api.get(`/sources/${id}/event_summaries?limit=100&expand=event&event_name=${encodeURIComponent(name)}`)).body?.data ?? [];

    expect((await api.post(`/sources/${id}/run`, { event: { bytes: 2 * 1024 * 1024 } })).status).toBe(202);
    const [err] = await eventually(async () => {
      const e = await events('$errors');
      return e.length ? e : undefined;
    }, { what: 'the $errors event', timeoutMs: 30_000 });
    expect(err.event.error).toMatchObject({ name: 'EventSizeLimitError', message: expect.stringContaining('event too large') });

    expect((await api.post(`/sources/${id}/run`, { event: { bytes: 10 } })).status).toBe(202);
    await eventually(async () => (await events('')).length === 2, { what: 'the next run emits' });
  });

  it('a db that fits beside large configured props only: the db cap is lowered by their size, so the state always fits one message', async () => {
    const api = client(system, user.apiKey);
    // About 480 KB of props (each value under PROPS_MAX_BYTES); the run asks for a 700 KB db, which fits DB_MAX_BYTES
    // (1 MiB) but not beside the props in one NATS message: saving that state would fail for ever.
    const code = `module.exports = { name: "Big state", version: "1",
      props: { db: "$.service.db", ${Array.from({ length: 8 }, (_, i) => `p${i}: { type: "string" }`).join(', ')} },
      async run(event) { this.db.set("blob", "y".repeat(event.bytes)); this.$emit({ ok: event.bytes }); } };`;
    const props = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`p${i}`, 'x'.repeat(60 * 1024)]));
    const created = await api.post('/sources', { component_code: code, configured_props: props });
    expect(created.status).toBe(200);
    const id: string = created.body.data.id;
    const events = async (name: string): Promise<{ event: Record<string, any> }[]> => // eslint-disable-line @typescript-eslint/no-explicit-any
      (await api.get(`/sources/${id}/event_summaries?limit=100&expand=event&event_name=${encodeURIComponent(name)}`)).body?.data ?? [];

    expect((await api.post(`/sources/${id}/run`, { event: { bytes: 700 * 1024 } })).status).toBe(202);
    const [err] = await eventually(async () => {
      const e = await events('$errors');
      return e.length ? e : undefined;
    }, { what: 'the $errors event', timeoutMs: 30_000 });
    expect(err.event.error).toMatchObject({ name: 'DbSizeLimitError' });

    expect((await api.post(`/sources/${id}/run`, { event: { bytes: 1000 } })).status).toBe(202);
    await eventually(async () => (await events('')).some((e) => e.event.ok === 1000), { what: 'the next run emits' });
  });
});
