import { encodeJson, Names, UsageRecord } from '@app/contracts';
import { admin, client, createUser, TestUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { Emitter } from './events.helpers';

const DAY_MS = 86_400_000;
const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

interface UsageDay {
  day: string;
  invocations: number;
  compute_time_ms: number;
}

describe('usage per day: GET /users/me/usage and GET /orgs/{org_id}/usage', () => {
  let system: System;
  let emitter: Emitter;
  let names: Names;
  let seq = 0;

  beforeAll(async () => {
    system = await startSystem({ DELIVERY_METRICS_PORT: String(await freePort()) }, { apps: ['api', 'delivery'] });
    emitter = await Emitter.connect(system);
    names = new Names(system.natsPrefix);
  });
  afterAll(async () => {
    await emitter?.close();
    await system?.stop();
  });

  /** A finished invocation of an owner, as a runner reports it to the delivery app (which counts it into usage_daily). */
  const finished = async (ownerId: string, finishedAtMs: number, computeMs: number): Promise<void> => {
    const id = `inv_perday_${process.pid}_${++seq}`;
    const record: UsageRecord = { ownerId, sourceId: 'dc_perday', invocationId: id, computeMs, finishedAtMs };
    await emitter.nc.jetstream().publish(names.usage(ownerId), encodeJson(record), { msgID: id });
  };

  const newOrg = (member: TestUser): Record<string, string> => {
    const org = admin(system, ['orgs', 'create', '--name', 'Usage Co', '--orgname', `usage-${member.id.slice(2, 12).toLowerCase()}-${++seq}`]);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', member.id]);
    return org;
  };

  it('gives every UTC day of the window, zeros included, with the free plan quotas of /users/me', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const before = utcDay(Date.now());
    const res = await api.get('/users/me/usage?days=7');
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect([before, utcDay(Date.now())]).toContain(d.to);
    const end = Date.parse(`${d.to}T00:00:00Z`);
    expect(d.days.map((x: UsageDay) => x.day)).toEqual([6, 5, 4, 3, 2, 1, 0].map((n) => utcDay(end - n * DAY_MS)));
    expect(d.from).toBe(d.days[0].day);
    expect(d.days.every((x: UsageDay) => x.invocations === 0 && x.compute_time_ms === 0)).toBe(true);
    const me = (await api.get('/users/me')).body.data;
    expect(d).toMatchObject({
      owner_id: user.id,
      daily_invocations_quota: me.daily_invocations_quota,
      daily_compute_time_quota: me.daily_compute_time_quota,
      total_invocations: 0,
      total_compute_time_ms: 0,
    });
    expect(Object.keys(d).sort()).toEqual(['daily_compute_time_quota', 'daily_invocations_quota', 'days', 'from', 'owner_id', 'to', 'total_compute_time_ms', 'total_invocations']);

    // 30 days unless told; up to a year.
    expect((await api.get('/users/me/usage')).body.data.days).toHaveLength(30);
    expect((await api.get('/users/me/usage?days=1')).body.data.days).toHaveLength(1);
    expect((await api.get('/users/me/usage?days=366')).body.data.days).toHaveLength(366);
  });

  it('counts invocations and compute time on the UTC day they finished', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const now = Date.now();
    await finished(user.id, now, 120);
    await finished(user.id, now, 30);
    await finished(user.id, now - 2 * DAY_MS, 700);
    await finished(user.id, now - 40 * DAY_MS, 5);
    const usage = async (days: number) => (await api.get(`/users/me/usage?days=${days}`)).body.data;
    await eventually(async () => (await usage(60)).total_invocations === 4, { what: 'four invocations counted' });

    const d = await usage(30);
    const byDay = new Map<string, UsageDay>(d.days.map((x: UsageDay) => [x.day, x]));
    expect(byDay.get(utcDay(now))).toEqual({ day: utcDay(now), invocations: 2, compute_time_ms: 150 });
    expect(byDay.get(utcDay(now - 2 * DAY_MS))).toEqual({ day: utcDay(now - 2 * DAY_MS), invocations: 1, compute_time_ms: 700 });
    expect(byDay.has(utcDay(now - 40 * DAY_MS))).toBe(false);
    expect(d.days.filter((x: UsageDay) => x.invocations > 0)).toHaveLength(2);
    expect(d).toMatchObject({ total_invocations: 3, total_compute_time_ms: 850 });
    // Today's entry is what /users/me reports for today.
    const me = (await api.get('/users/me')).body.data;
    expect(d.days[d.days.length - 1]).toEqual({ day: d.to, invocations: me.daily_invocations_used, compute_time_ms: me.daily_compute_time_used });
    // A longer window reaches the older day.
    expect((await usage(60)).days.find((x: UsageDay) => x.day === utcDay(now - 40 * DAY_MS))).toEqual({ day: utcDay(now - 40 * DAY_MS), invocations: 1, compute_time_ms: 5 });
    // include / exclude apply as on every route.
    expect(Object.keys((await api.get('/users/me/usage?days=2&include=days,to')).body.data).sort()).toEqual(['days', 'to']);
  });

  it("gives an org's usage to its members only, without a quota, apart from their own", async () => {
    const member = createUser(system);
    const outsider = createUser(system);
    const org = newOrg(member);
    const now = Date.now();
    await finished(org.id, now, 400);
    await finished(member.id, now, 9);
    const orgUsage = await eventually(async () => {
      const r = await client(system, member.apiKey).get(`/orgs/${org.id}/usage?days=3`);
      return r.status === 200 && r.body.data.total_invocations === 1 ? r.body.data : undefined;
    }, { what: "the org's invocation counted" });
    expect(orgUsage).toMatchObject({ owner_id: org.id, daily_invocations_quota: null, daily_compute_time_quota: null, total_compute_time_ms: 400 });
    expect(orgUsage.days).toHaveLength(3);
    expect(orgUsage.days[2]).toEqual({ day: orgUsage.to, invocations: 1, compute_time_ms: 400 });
    await eventually(async () => (await client(system, member.apiKey).get('/users/me/usage?days=1')).body.data.total_invocations === 1, { what: "the member's own invocation counted" });
    expect((await client(system, member.apiKey).get('/users/me/usage?days=1')).body.data.days[0]).toMatchObject({ invocations: 1, compute_time_ms: 9 });

    // Someone else's org answers like an org that does not exist.
    const denied = await client(system, outsider.apiKey).get(`/orgs/${org.id}/usage`);
    expect(denied.status).toBe(404);
    expect(denied.body).toEqual({ error: `org ${org.id} not found`, code: 'not_found', details: { org_id: org.id } });
    const missing = await client(system, member.apiKey).get('/orgs/o_doesnotexist/usage');
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('not_found');
    expect((await client(system).get(`/orgs/${org.id}/usage`)).status).toBe(401);

    // A member who leaves no longer reaches it.
    admin(system, ['orgs', 'remove-member', '--org', org.id, '--user', member.id]);
    expect((await client(system, member.apiKey).get(`/orgs/${org.id}/usage`)).status).toBe(404);
  });

  it('has no daily quotas on the paid plan', async () => {
    const user = createUser(system, 'paid');
    const d = (await client(system, user.apiKey).get('/users/me/usage?days=2')).body.data;
    expect(d).toMatchObject({ owner_id: user.id, daily_invocations_quota: null, daily_compute_time_quota: null });
    expect(d.days).toHaveLength(2);
  });

  it('refuses a bad days with 400 naming it, on both routes', async () => {
    const user = createUser(system);
    const org = newOrg(user);
    const api = client(system, user.apiKey);
    for (const base of ['/users/me/usage', `/orgs/${org.id}/usage`]) {
      for (const days of ['0', '367', '-1', '1.5', 'abc', '1e400', '%00', '10000000000000000000000', 'true']) {
        const res = await api.get(`${base}?days=${days}`);
        expect({ days, status: res.status }).toEqual({ days, status: 400 });
        expect(res.body).toEqual({ error: expect.any(String), code: 'invalid_request', details: expect.any(Object) });
        if (days !== '%00') expect(res.body.details.field).toBe('days');
      }
      const twice = await api.get(`${base}?days=2&days=3`);
      expect(twice.status).toBe(400);
      expect(twice.body.details.field).toBe('days');
      const unknown = await api.get(`${base}?day=3`);
      expect(unknown.status).toBe(400);
      expect(unknown.body.error).toBe('unknown query parameter: day');
      // An empty value is no number either (as for limit).
      const empty = await api.get(`${base}?days=`);
      expect(empty.status).toBe(400);
      expect(empty.body.details.field).toBe('days');
    }
  });

  it('is declared in the OpenAPI document as an extension', async () => {
    const doc = (await client(system).get('/openapi.json')).body;
    for (const path of ['/v1/users/me/usage', '/v1/orgs/{org_id}/usage']) {
      const op = doc.paths[path].get;
      expect(op['x-extension']).toBe(true);
      expect(op.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'days', in: 'query', schema: expect.objectContaining({ type: 'integer', minimum: 1, maximum: 366 }) })]));
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '400']));
    }
    expect(Object.keys(doc.paths['/v1/orgs/{org_id}/usage'].get.responses)).toContain('404');
  });
});
