import { decodeJson, InvocationMessage, Names, partitionOf } from '@app/contracts';
import { admin, client, createUser, TestUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { Emitter, insertSource, Receiver, subscriptionsLoaded } from './events.helpers';

const COMPONENT = `module.exports = { name: "Sub target", version: "0.0.1", props: {}, async run(event) { this.$emit(event); } };`;

describe('subscriptions and auto-subscriptions', () => {
  let system: System;
  let emitter: Emitter;
  let user: TestUser;
  let api: ReturnType<typeof client>;
  let receiver: Receiver;

  beforeAll(async () => {
    system = await startSystem({ DELIVERY_METRICS_PORT: String(await freePort()) }, { apps: ['api', 'delivery'] });
    emitter = await Emitter.connect(system);
    user = createUser(system);
    api = client(system, user.apiKey);
    receiver = await new Receiver().start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await emitter?.close();
    await system?.stop();
  });

  const webhook = async (url = receiver.url): Promise<string> => (await api.post('/webhooks', { url })).body.data.id;
  const subscribe = async (params: Record<string, string>): Promise<{ status: number; body: any }> => api.post(`/subscriptions?${new URLSearchParams(params)}`); // eslint-disable-line @typescript-eslint/no-explicit-any

  it('creates a subscription from query or body, idempotently, in the spec shape', async () => {
    const src = await insertSource(system, user.id);
    const wh = await webhook();
    const a = await subscribe({ emitter_id: src, listener_id: wh });
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ data: { id: expect.stringMatching(/^sub_/), emitter_id: src, listener_id: wh, event_name: '' } });
    const again = await api.post('/subscriptions', { emitter_id: src, listener_id: wh, event_name: '' });
    expect(again.status).toBe(200);
    expect(again.body.data.id).toBe(a.body.data.id);
    const custom = await subscribe({ emitter_id: src, listener_id: wh, event_name: 'orders' });
    expect(custom.body.data).toEqual(expect.objectContaining({ event_name: 'orders' }));
    expect(custom.body.data.id).not.toBe(a.body.data.id);
    const mine = await api.get('/users/me/subscriptions');
    expect(mine.status).toBe(200);
    expect(mine.body).toEqual({ data: expect.arrayContaining([a.body.data, custom.body.data]) });
    expect(mine.body.page_info).toBeUndefined();
  });

  it('validates emitter, listener and channel, and hides what is not yours', async () => {
    const src = await insertSource(system, user.id);
    const wh = await webhook();
    const other = createUser(system);
    const foreignSrc = await insertSource(system, other.id);
    const foreignWh = (await client(system, other.apiKey).post('/webhooks', { url: 'https://example.com' })).body.data.id;
    const cases: Array<[Record<string, string>, number]> = [
      [{ listener_id: wh }, 400],
      [{ emitter_id: src }, 400],
      [{ emitter_id: 'x_1', listener_id: wh }, 400],
      [{ emitter_id: src, listener_id: 'sc_1' }, 400],
      [{ emitter_id: src, listener_id: wh, event_name: '$bogus' }, 400],
      [{ emitter_id: 'dc_*', listener_id: 'dc_*' }, 400],
      [{ emitter_id: src, listener_id: 'dc_*' }, 400],
      [{ emitter_id: src, listener_id: wh, extra: '1' }, 400],
      [{ emitter_id: foreignSrc, listener_id: wh }, 404],
      [{ emitter_id: src, listener_id: foreignWh }, 404],
      [{ emitter_id: 'dc_missing', listener_id: wh }, 404],
      [{ emitter_id: 'p_missing', listener_id: wh }, 404],
      [{ emitter_id: src, listener_id: 'p_missing' }, 404],
      [{ emitter_id: 'dc_*', listener_id: wh, event_name: '$errors' }, 200],
      [{ emitter_id: 'p_*', listener_id: wh, event_name: '$logs' }, 200],
    ];
    for (const [params, status] of cases) {
      const res = await subscribe(params);
      expect({ params, status: res.status }).toEqual({ params, status });
      if (status !== 200) expect(res.body).toEqual(expect.objectContaining({ code: status === 400 ? 'invalid_request' : 'not_found' }));
    }
  });

  it('an emitter subscribed to itself: 400 invalid_request naming what it is, a workflow as a workflow (before: "a source")', async () => {
    const src = await insertSource(system, user.id);
    const wf = (await api.post('/workflows', { name: 'self', trigger: { manual: {} }, steps: [{ name: 's1', code: 'export default defineComponent({ async run() { return 1 } })' }] })).body.data.id;
    for (const [id, what] of [[src, 'source'], [wf, 'workflow']]) {
      const res = await subscribe({ emitter_id: id, listener_id: id });
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error: `a ${what} cannot subscribe to itself`, code: 'invalid_request', details: { emitter_id: id } } });
    }
  });

  it('deletes with the same three parameters: 204, then 404; event_name is required', async () => {
    const src = await insertSource(system, user.id);
    const wh = await webhook();
    await subscribe({ emitter_id: src, listener_id: wh });
    expect((await api.del(`/subscriptions?emitter_id=${src}&listener_id=${wh}`)).status).toBe(400);
    expect((await api.del(`/subscriptions?emitter_id=${src}&listener_id=${wh}&event_name=orders`)).status).toBe(404);
    expect((await api.del(`/subscriptions?emitter_id=${src}&listener_id=${wh}&event_name=`)).status).toBe(204);
    expect((await api.del(`/subscriptions?emitter_id=${src}&listener_id=${wh}&event_name=`)).status).toBe(404);
    expect((await api.get('/users/me/subscriptions')).body.data.some((s: { emitter_id: string }) => s.emitter_id === src)).toBe(false);
  });

  it('of ten deletes of one subscription at once, one answers 204 and the others 404 (several said 204)', async () => {
    const src = await insertSource(system, user.id);
    const wh = await webhook();
    for (let round = 0; round < 5; round++) {
      expect((await subscribe({ emitter_id: src, listener_id: wh, event_name: 'race' })).status).toBe(200);
      const answers = await Promise.all(Array.from({ length: 10 }, () => api.del(`/subscriptions?emitter_id=${src}&listener_id=${wh}&event_name=race`)));
      const statuses = answers.map((a) => a.status).sort();
      expect([round, statuses]).toEqual([round, [204, ...Array<number>(9).fill(404)]]);
      for (const a of answers.filter((x) => x.status === 404)) expect(a.body).toMatchObject({ error: 'subscription not found', code: 'not_found' });
    }
  });

  it('deleting a source removes its subscriptions, as emitter and as listener', async () => {
    const src = await insertSource(system, user.id);
    const upstream = await insertSource(system, user.id);
    const wh = await webhook();
    expect((await subscribe({ emitter_id: src, listener_id: wh })).status).toBe(200);
    expect((await subscribe({ emitter_id: upstream, listener_id: src })).status).toBe(200);
    expect((await api.del(`/sources/${src}`)).status).toBe(204);
    const left = (await api.get('/users/me/subscriptions')).body.data as Array<{ emitter_id: string; listener_id: string }>;
    expect(left.filter((s) => s.emitter_id === src || s.listener_id === src)).toEqual([]);
    expect((await subscribe({ emitter_id: upstream, listener_id: src })).status).toBe(404);
  });

  it('a subscription made while its source or webhook is deleted goes with it, and of two deletes at once one answers 404', async () => {
    for (let round = 0; round < 8; round++) {
      const src = await insertSource(system, user.id);
      const wh = await webhook();
      const [srcGone, srcAgain, whGone, whAgain, ...made] = await Promise.all([
        api.del(`/sources/${src}`),
        api.del(`/sources/${src}`),
        api.del(`/webhooks/${wh}`),
        api.del(`/webhooks/${wh}`),
        ...[1, 2, 3, 4, 5, 6].map((i) => subscribe({ emitter_id: src, listener_id: wh, event_name: `r${i}` })),
      ]);
      expect([round, [srcGone.status, srcAgain.status].sort(), [whGone.status, whAgain.status].sort()]).toEqual([round, [204, 404], [204, 404]]);
      for (const m of made) expect([round, m.status === 200 || m.status === 404]).toEqual([round, true]);
      const left = (await api.get('/users/me/subscriptions')).body.data as Array<{ emitter_id: string; listener_id: string }>;
      expect([round, left.filter((s) => s.emitter_id === src || s.listener_id === wh)]).toEqual([round, []]);
    }
  });

  it('lists an org\'s subscriptions for members only', async () => {
    const org = admin(system, ['orgs', 'create', '--name', 'Subs', '--orgname', `subs-${user.id.slice(3, 12)}`]);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', user.id]);
    const member = client(system, user.apiKey);
    await eventually(async () => (await member.get(`/orgs/${org.id}/subscriptions`)).status === 200, { what: 'membership visible', timeoutMs: 15_000 });
    const src = await insertSource(system, org.id, user.id);
    const wh = (await member.post(`/webhooks?org_id=${org.id}`, { url: 'https://example.com/org' })).body.data.id;
    const sub = await member.post(`/subscriptions?org_id=${org.id}`, { emitter_id: src, listener_id: wh });
    expect(sub.status).toBe(200);
    expect((await member.get(`/orgs/${org.id}/subscriptions`)).body).toEqual({ data: [sub.body.data] });
    expect((await member.get(`/orgs/${org.id}/webhooks`)).body.data.map((w: { id: string }) => w.id)).toEqual([wh]);
    const outsider = createUser(system);
    expect((await client(system, outsider.apiKey).get(`/orgs/${org.id}/subscriptions`)).status).toBe(404);
  });

  it('delivers by channel: default, custom and $errors subscriptions get only their channel', async () => {
    const src = await insertSource(system, user.id);
    const r = await new Receiver().start();
    try {
      const whDefault = await webhook(r.url + '?c=default');
      const whOrders = await webhook(r.url + '?c=orders');
      const whErrors = await webhook(r.url + '?c=errors');
      await subscribe({ emitter_id: src, listener_id: whDefault });
      await subscribe({ emitter_id: src, listener_id: whOrders, event_name: 'orders' });
      await subscribe({ emitter_id: src, listener_id: whErrors, event_name: '$errors' });
      await subscriptionsLoaded(system);
      const d = await emitter.emit(src, user.id, { d: 1 });
      const o = await emitter.emit(src, user.id, { o: 1 }, { name: 'orders' });
      const e = await emitter.emit(src, user.id, { error: { message: 'x' } }, { name: '$errors' });
      await emitter.emit(src, user.id, { l: 1 }, { name: '$logs' });
      await eventually(async () => r.received.length >= 3, { what: 'three deliveries' });
      await new Promise((res) => setTimeout(res, 300));
      const byHook = Object.fromEntries(r.received.map((x) => [String(x.headers['x-pd-event-name']), String(x.headers['x-pd-event-id'])]));
      expect(byHook).toEqual({ '': d.id, orders: o.id, $errors: e.id });
    } finally {
      await r.stop();
    }
  });

  it('a glob dc_* covers every source of the owner, and only theirs', async () => {
    const r = await new Receiver().start();
    try {
      const glob = createUser(system);
      const gapi = client(system, glob.apiKey);
      const wh = (await gapi.post('/webhooks', { url: r.url })).body.data.id;
      expect((await gapi.post('/subscriptions', { emitter_id: 'dc_*', listener_id: wh })).status).toBe(200);
      await subscriptionsLoaded(system);
      const s1 = await insertSource(system, glob.id);
      const s2 = await insertSource(system, glob.id);
      const foreign = await insertSource(system, user.id);
      // Event ids are unique per emitter only: two sources may emit the same id, and both must arrive.
      const e1 = await emitter.emit(s1, glob.id, { s: 1 }, { id: '1700000000000-0' });
      const e2 = await emitter.emit(s2, glob.id, { s: 2 }, { id: '1700000000000-0' });
      await emitter.emit(foreign, user.id, { s: 3 });
      await eventually(async () => r.ids().size >= 2, { what: 'glob deliveries' });
      await new Promise((res) => setTimeout(res, 300));
      expect([...r.ids()].sort()).toEqual([`${s1}:${e1.id}`, `${s2}:${e2.id}`].sort());
      expect(new Set(r.received.map((x) => x.headers['x-pd-emitter-id']))).toEqual(new Set([s1, s2]));
    } finally {
      await r.stop();
    }
  });

  it('routes events to a source listener as a subscription invocation', async () => {
    const from = await insertSource(system, user.id);
    const to = await insertSource(system, user.id);
    const sub = (await subscribe({ emitter_id: from, listener_id: to })).body.data;
    await subscriptionsLoaded(system);
    const ev = await emitter.emit(from, user.id, { forward: 'me' });
    const names = new Names(system.natsPrefix);
    const subject = names.invocation(partitionOf(to, Number(system.env.PARTITIONS)), to);
    const jsm = await emitter.nc.jetstreamManager();
    const stored = await eventually(async () => jsm.streams.getMessage(names.invocationsStream, { last_by_subj: subject }).catch(() => undefined), { what: 'the invocation' });
    const inv = decodeJson<InvocationMessage>(stored.data);
    // The invocation id derives from the event and the listener, so routing the event again (a redelivered emit) is
    // the same invocation, and other listeners of the event get their own.
    expect(inv).toEqual(expect.objectContaining({ invocationId: `sub.${to}.${from}.${ev.id}`, sourceId: to, kind: 'subscription', event: { forward: 'me' }, origin: { emitterId: from, eventId: ev.id, name: '' } }));
    expect(stored.header.get('Nats-Msg-Id')).toBe(`${sub.id}:${from}:${ev.id}`);
  });

  it('auto-subscriptions: 200 with id, event_name and listener_id; new sources get subscribed, existing ones do not', async () => {
    const u = createUser(system);
    const uapi = client(system, u.apiKey);
    const existing = await insertSource(system, u.id);
    const wh = (await uapi.post('/webhooks', { url: 'https://example.com/auto' })).body.data.id;
    expect((await uapi.post(`/auto_subscriptions?event_name=$bogus&listener_id=${wh}`)).status).toBe(400);
    expect((await uapi.post(`/auto_subscriptions?listener_id=${wh}`)).status).toBe(400);
    expect((await uapi.post('/auto_subscriptions?event_name=$errors&listener_id=wh_nope')).status).toBe(404);
    const auto = await uapi.post(`/auto_subscriptions?event_name=$errors&listener_id=${wh}`);
    expect(auto.status).toBe(200);
    expect(auto.body).toEqual({ data: { id: expect.any(String), event_name: '$errors', listener_id: wh } });
    expect((await uapi.post('/auto_subscriptions', { event_name: '$errors', listener_id: wh })).body.data.id).toBe(auto.body.data.id);
    const created = await uapi.post('/sources', { component_code: COMPONENT, name: 'auto target' });
    expect(created.status).toBe(200);
    const subs = (await uapi.get('/users/me/subscriptions')).body.data;
    expect(subs).toEqual([{ id: expect.any(String), emitter_id: created.body.data.id, listener_id: wh, event_name: '$errors' }]);
    expect(subs.some((s: { emitter_id: string }) => s.emitter_id === existing)).toBe(false);
  });

  it('an auto-subscription ends with its listener: a deleted webhook or source is not subscribed to later sources', async () => {
    const u = createUser(system);
    const uapi = client(system, u.apiKey);
    const wh = (await uapi.post('/webhooks', { url: 'https://example.com/gone' })).body.data.id;
    const listener = await insertSource(system, u.id);
    expect((await uapi.post(`/auto_subscriptions?event_name=$errors&listener_id=${wh}`)).status).toBe(200);
    expect((await uapi.post(`/auto_subscriptions?event_name=$logs&listener_id=${listener}`)).status).toBe(200);
    expect((await uapi.del(`/webhooks/${wh}`)).status).toBe(204);
    expect((await uapi.del(`/sources/${listener}`)).status).toBe(204);
    expect((await uapi.post('/sources', { component_code: COMPONENT, name: 'after the listeners' })).status).toBe(200);
    expect((await uapi.get('/users/me/subscriptions')).body).toEqual({ data: [] });
  });
});
