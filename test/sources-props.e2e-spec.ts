import { connect } from 'nats';
import { natsAdmin } from './support/env';
import { Client } from 'pg';
import { decryptValue, Names, partitionOf } from '@app/contracts';
import { client, createUser, TestUser } from './support/accounts';
import { desiredState, HTTP_SOURCE, TIMER_SOURCE } from './support/components';
import { eventually, startSystem, System } from './support/system';

const ALL_PROPS = `module.exports = {
  name: "All Props",
  version: "1.0.0",
  props: {
    timer: { type: "$.interface.timer", default: { intervalSeconds: 60 } },
    s: { type: "string", label: "S", options: ["a", { label: "Bee", value: "b" }] },
    token: { type: "string", secret: true },
    i: { type: "integer", min: 1, max: 10 },
    b: { type: "boolean", optional: true },
    o: { type: "object", optional: true },
    ss: { type: "string[]", optional: true },
    ii: { type: "integer[]", optional: true, max: 5 },
    bb: { type: "boolean[]", optional: true },
    d: { type: "string", optional: true, default: "dv" },
    j: { type: "json", optional: true },
    github: { type: "app", app: "github" },
    note: { type: "alert", alertType: "info", content: "Read me" },
    db: "$.service.db",
  },
  async run() {},
};`;

describe('sources: configured_props, secrets, updates, auto-subscriptions, reconciliation', () => {
  let system: System;
  let user: TestUser;
  let componentId: string;
  let pg: Client;
  const good = { s: 'a', token: 'tok-secret', i: 3, github: { $auth: { oauth_access_token: 'gh-secret' } } };

  beforeAll(async () => {
    system = await startSystem({ RECONCILE_INTERVAL_MS: '300' }, { apps: ['api'] });
    user = createUser(system);
    pg = new Client({ connectionString: system.databaseUrl });
    await pg.connect();
    const res = await client(system, user.apiKey).post('/components', { component_code: ALL_PROPS });
    expect(res.status).toBe(200);
    componentId = res.body.data.id;
  });
  afterAll(async () => {
    await pg?.end();
    await system?.stop();
  });

  it('applies defaults, masks secrets and $auth in responses, and encrypts them at rest and in desired state', async () => {
    const api = client(system, user.apiKey);
    const res = await api.post('/sources', { component_id: componentId, configured_props: { ...good, ss: ['x'], ii: [1, 5], bb: [true], o: { k: 1 }, j: [1, 'two'] } });
    expect(res.status).toBe(200);
    expect(res.body.data.configured_props).toEqual({
      timer: { cron: null, interval_seconds: 60 },
      s: 'a',
      token: '********',
      i: 3,
      o: { k: 1 },
      ss: ['x'],
      ii: [1, 5],
      bb: [true],
      d: 'dv',
      j: [1, 'two'],
      github: { $auth: '********' },
    });
    const key = Buffer.from(system.env.SECRETS_KEY, 'hex');
    const row = (await pg.query('select configured_props from sources where id = $1', [res.body.data.id])).rows[0].configured_props;
    expect(JSON.stringify(row)).not.toContain('tok-secret');
    expect(JSON.stringify(row)).not.toContain('gh-secret');
    expect(decryptValue(key, row.token)).toBe('tok-secret');
    expect(decryptValue(key, row.github.$auth)).toEqual({ oauth_access_token: 'gh-secret' });
    const state = await eventually(() => desiredState(system, res.body.data.id));
    expect(JSON.stringify(state)).not.toContain('tok-secret');
    expect(decryptValue(key, state.configuredProps.token as { $enc: string })).toBe('tok-secret');

    // sending the mask back keeps the stored secret; a new value replaces it
    const upd = await api.put(`/sources/${res.body.data.id}`, { component_id: res.body.data.component_id, configured_props: { ...res.body.data.configured_props, i: 4 } });
    expect(upd.status).toBe(200);
    expect(upd.body.data.configured_props).toMatchObject({ i: 4, token: '********', github: { $auth: '********' } });
    const row2 = (await pg.query('select configured_props, rev from sources where id = $1', [res.body.data.id])).rows[0];
    expect(decryptValue(key, row2.configured_props.token)).toBe('tok-secret');
    expect(decryptValue(key, row2.configured_props.github.$auth)).toEqual({ oauth_access_token: 'gh-secret' });
    expect(row2.rev).toBe(2);
  });

  it.each([
    [{ token: 't', i: 3 }, 400, /configured_props\.s: is required/],
    [{ ...good, s: 'c' }, 400, /configured_props\.s: "c" is not one of the options: "a", "b"/],
    [{ ...good, s: 5 }, 400, /configured_props\.s: must be a string/],
    [{ ...good, i: 0 }, 400, /configured_props\.i: must be at least 1/],
    [{ ...good, i: 11 }, 400, /configured_props\.i: must be at most 10/],
    [{ ...good, i: 2.5 }, 400, /configured_props\.i: must be an integer/],
    [{ ...good, b: 'true' }, 400, /configured_props\.b: must be a boolean/],
    [{ ...good, o: 'x' }, 400, /configured_props\.o: must be an object/],
    [{ ...good, ss: 'x' }, 400, /configured_props\.ss: must be an array of strings/],
    [{ ...good, ii: [1, 6] }, 400, /configured_props\.ii\[1\]: must be at most 5/],
    [{ ...good, bb: ['yes'] }, 400, /configured_props\.bb\[0\]: must be a boolean/],
    [{ ...good, github: 'token' }, 400, /configured_props\.github: an app prop takes/],
    [{ ...good, note: 'x' }, 400, /configured_props\.note: an alert prop takes no value/],
    [{ ...good, timer: { intervalSeconds: 10 } }, 400, /configured_props\.timer: intervalSeconds must be at least 15, got 10/],
    [{ ...good, timer: { cron: '* * *' } }, 400, /configured_props\.timer: cron must have 5 fields/],
    [{ ...good, timer: { cron: '0 25 * * *' } }, 400, /configured_props\.timer: invalid cron/],
    [{ ...good, timer: { cron: '0 9 * * *', timezone: 'Nowhere/City' } }, 400, /configured_props\.timer: unknown timezone "Nowhere\/City"/],
    [{ ...good, extra: 1 }, 400, /configured_props has unknown prop extra/],
    [{ ...good, o: { big: 'x'.repeat(70 * 1024) } }, 413, /^configured_props\.o is \d+ bytes; the limit is 65536 \(PROPS_MAX_BYTES\)$/],
    [{ ...good, d: 'x'.repeat(64 * 1024 + 1) }, 413, /^configured_props\.d is 65537 bytes; the limit is 65536 \(PROPS_MAX_BYTES\)$/],
    ['not an object', 400, /configured_props must be an object/],
  ])('refuses configured_props %#', async (props, status, message) => {
    const res = await client(system, user.apiKey).post('/sources', { component_id: componentId, configured_props: props });
    expect(res.status).toBe(status);
    expect(res.body.error).toMatch(message);
  });

  it('takes prop values of 64KB each (the spec\'s static prop value size), several in one source, secrets included', async () => {
    const api = client(system, user.apiKey);
    const max = 'x'.repeat(64 * 1024);
    const res = await api.post('/sources', { component_id: componentId, configured_props: { ...good, token: max, d: max, j: { k: 'y'.repeat(64 * 1024 - 10) } } });
    expect(res.status).toBe(200);
    expect(res.body.data.configured_props).toMatchObject({ token: '********', d: max, j: { k: expect.any(String) } });
    const got = await api.get(`/sources/${res.body.data.id}`);
    expect(got.body.data.configured_props.d).toBe(max);
    const desired = await eventually(() => desiredState(system, res.body.data.id), { what: 'the desired state' });
    expect(desired.configuredProps.d).toBe(max);
  });

  it('accepts a cron timer with a timezone and shows it', async () => {
    const res = await client(system, user.apiKey).post('/sources', { component_id: componentId, configured_props: { ...good, timer: { cron: '0 9 * * 1-5', timezone: 'Europe/Paris' } } });
    expect(res.status).toBe(200);
    expect(res.body.data.configured_props.timer).toEqual({ cron: '0 9 * * 1-5', interval_seconds: expect.any(Number), timezone: 'Europe/Paris' });
  });

  it('refuses bad input fields with 400', async () => {
    const api = client(system, user.apiKey);
    expect((await api.post('/sources', {})).body.error).toMatch(/component_code or component_url is required/);
    const extra = await api.post('/sources', { component_id: componentId, user_id: 'u_other' });
    expect(extra.status).toBe(400);
    expect(extra.body.error).toMatch(/unknown field: user_id/);
    expect((await api.post('/sources', { component_id: 'sc_nope' })).status).toBe(404);
    expect((await api.post('/sources', { component_id: componentId, configured_props: good, name: 5 })).status).toBe(400);
    expect((await api.post('/sources', { component_code: 'module.exports = {' })).status).toBe(400);
    const action = await api.post('/sources', { component_code: 'module.exports = { name: "Act", version: "1", type: "action", async run({ $ }) { return 1; } };' });
    expect(action.status).toBe(400);
    expect(action.body.error).toMatch(/is an action; only sources can be deployed/);
  });

  it('PUT swaps the component, renames (new slug), keeps the id, validates, and defaults active to true', async () => {
    const api = client(system, user.apiKey);
    const created = (await api.post('/sources', { component_code: TIMER_SOURCE, name: 'swap me' })).body.data;
    const missing = await api.put(`/sources/${created.id}`, { active: false });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ error: 'component_id, component_code or component_url is required', code: 'invalid_request', details: expect.anything() });
    expect((await api.put(`/sources/${created.id}`, { component_id: created.component_id, active: false })).body.data.active).toBe(false);
    const again = await api.put(`/sources/${created.id}`, { component_id: created.component_id });
    expect(again.body.data.active).toBe(true);
    const swapped = await api.put(`/sources/${created.id}`, { component_code: HTTP_SOURCE, name: 'Swapped Source' });
    expect(swapped.status).toBe(200);
    expect(swapped.body.data).toMatchObject({ id: created.id, name: 'Swapped Source', name_slug: 'swapped-source', active: true, configured_props: { http: { endpoint_url: expect.stringContaining('/e/en') } } });
    expect(swapped.body.data.component_id).not.toBe(created.component_id);
    const state = await eventually(async () => {
      const st = await desiredState(system, created.id);
      return st && st.rev === 4 ? st : undefined;
    });
    expect(state).toMatchObject({ componentId: swapped.body.data.component_id, endpointUrl: swapped.body.data.configured_props.http.endpoint_url, configuredProps: {} });
    const bad = await api.put(`/sources/${created.id}`, { component_id: componentId, configured_props: { s: 'zzz' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/configured_props\.s/);
    expect((await api.put(`/sources/${created.id}`, { owner_id: 'x' })).status).toBe(400);
    expect((await api.put(`/sources/${created.id}`, { active: 'maybe' })).status).toBe(400);
  });

  it('subscribes the owner\'s auto-subscription listeners to a new source and announces the change', async () => {
    const owner = createUser(system);
    const api = client(system, owner.apiKey);
    const listener = (await api.post('/sources', { component_code: HTTP_SOURCE })).body.data.id;
    const auto = await api.post(`/auto_subscriptions?event_name=$errors&listener_id=${listener}`);
    expect(auto.status).toBe(200);
    const nc = await connect(natsAdmin());
    const sub = nc.subscribe(new Names(system.natsPrefix).changed('subscriptions'), { max: 1 });
    const announced = (async () => {
      for await (const _ of sub) return true;
      return false;
    })();
    const src = (await api.post('/sources', { component_code: TIMER_SOURCE })).body.data.id;
    const rows = (await pg.query('select emitter_id, listener_id, event_name, owner_id from subscriptions where emitter_id = $1', [src])).rows;
    expect(rows).toEqual([{ emitter_id: src, listener_id: listener, event_name: '$errors', owner_id: owner.id }]);
    expect(await announced).toBe(true);
    await nc.close();
  });

  it('the reconciler republishes a lost desired state and finishes an interrupted delete', async () => {
    const api = client(system, user.apiKey);
    const s = (await api.post('/sources', { component_code: HTTP_SOURCE })).body.data;
    await eventually(() => desiredState(system, s.id));
    const nc = await connect(natsAdmin());
    const names = new Names(system.natsPrefix);
    const kv = await nc.jetstream().views.kv(names.sourcesBucket);
    const key = names.sourceKey(partitionOf(s.id, Number(system.env.PARTITIONS)), s.id);
    await kv.delete(key);
    await pg.query('update sources set published_rev = 0 where id = $1', [s.id]);
    const back = await eventually(() => desiredState(system, s.id), { what: 'republished state' });
    expect(back.rev).toBe(1);
    await pg.query('update sources set deleted_at = 1, rev = rev + 1 where id = $1', [s.id]);
    await eventually(async () => (await desiredState(system, s.id)) === undefined, { what: 'KV delete' });
    await eventually(async () => (await pg.query('select 1 from sources where id = $1', [s.id])).rowCount === 0, { what: 'row removal' });
    await nc.close();
  });
});
