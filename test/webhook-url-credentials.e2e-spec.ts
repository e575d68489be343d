import { admin, client, createUser, TestUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { Emitter, insertSource, Receiver, sql, subscriptionsLoaded } from './events.helpers';

/**
 * A webhook's `url` may carry credentials for its receiver (`https://user:token@host/hook`, `?token=…`): deliveries
 * use them, and no answer shows them — not to the member who gave them, not to the org's other members — the URL is
 * shown with its user info and the values of query parameters named like credentials as `********` (`?v=2` as
 * written). Sent back as shown, it keeps the stored URL; `********` for credentials there are none of to keep is a 400.
 */
describe('webhook url with credentials', () => {
  let system: System;
  let emitter: Emitter;
  let owner: TestUser;
  let member: TestUser;
  let orgId: string;
  let receiver: Receiver;

  beforeAll(async () => {
    system = await startSystem({ DELIVERY_METRICS_PORT: String(await freePort()) }, { apps: ['api', 'delivery'] });
    emitter = await Emitter.connect(system);
    [owner, member] = [createUser(system), createUser(system)];
    orgId = admin(system, ['orgs', 'create', '--name', 'Hooks', '--orgname', `hooks-${owner.id.slice(2, 12).toLowerCase()}`]).id;
    for (const u of [owner, member]) admin(system, ['orgs', 'add-member', '--org', orgId, '--user', u.id]);
    receiver = await new Receiver().start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await emitter?.close();
    await system?.stop();
  });

  const secrets = /hook-user|hook-pass-1|hook-qry-1/;
  /** The webhook's row: `url` as answers show it, `url_sealed` the url as given, encrypted. */
  const stored = async (id: string) => (await sql<{ url: string; url_sealed: unknown }>(system, 'select url, url_sealed from webhooks where id = $1', [id]))[0];
  const url = () => receiver.url.replace('http://', 'http://hook-user:hook-pass-1@') + '?token=hook-qry-1&v=2';
  const shown = () => receiver.url.replace('http://', 'http://********@') + '?token=********&v=2';

  it('shows them as ******** to every member, in every answer', async () => {
    const created = await client(system, owner.apiKey).post(`/webhooks?org_id=${orgId}`, { url: url(), name: 'private' });
    expect([created.status, created.body.data?.url]).toEqual([200, shown()]);
    const id = created.body.data.id;
    const m = client(system, member.apiKey);
    const read = await m.get(`/webhooks/${id}`);
    const listed = await m.get(`/orgs/${orgId}/webhooks`);
    const mine = await m.get(`/users/me/webhooks?org_id=${orgId}`);
    const subscribed = await m.post(`/subscriptions?org_id=${orgId}`, { emitter_id: 'dc_*', listener_id: id });
    const subscriptions = await m.get(`/orgs/${orgId}/subscriptions`);
    const renamed = await m.put(`/webhooks/${id}`, { name: 'renamed' });
    expect([read.status, read.body.data?.url]).toEqual([200, shown()]);
    expect([listed.status, listed.body.data?.map((w: { url: string }) => w.url)]).toEqual([200, [shown()]]);
    expect([mine.status, mine.body.data?.map((w: { url: string }) => w.url)]).toEqual([200, [shown()]]);
    expect([subscribed.status, subscriptions.status, renamed.status, renamed.body.data?.url]).toEqual([200, 200, 200, shown()]);
    expect([created, read, listed, mine, subscribed, subscriptions, renamed].map((r) => r.text).join('')).not.toMatch(secrets);
    expect(system.logs('api')).not.toMatch(secrets);
  });

  it('delivers with them, before and after the shown url is sent back', async () => {
    const m = client(system, member.apiKey);
    const created = await client(system, owner.apiKey).post(`/webhooks?org_id=${orgId}`, { url: url() });
    const id = created.body.data.id;
    const src = await insertSource(system, orgId, owner.id);
    expect((await m.post(`/subscriptions?org_id=${orgId}`, { emitter_id: src, listener_id: id })).status).toBe(200);
    await subscriptionsLoaded(system);
    const basic = `Basic ${Buffer.from('hook-user:hook-pass-1').toString('base64')}`;
    const arrived = async (eventId: string) => {
      await eventually(async () => receiver.received.some((r) => r.headers['webhook-id'] === eventId), { what: `event ${eventId} delivered` });
      const got = receiver.received.find((r) => r.headers['webhook-id'] === eventId)!;
      return [got.url, got.headers.authorization];
    };
    expect(await arrived((await emitter.emit(src, orgId, { n: 1 })).id)).toEqual(['/hook?token=hook-qry-1&v=2', basic]);
    // A client writing back what it read (the url as shown) keeps the credentials.
    const back = await m.put(`/webhooks/${id}`, { url: shown(), name: 'kept' });
    expect([back.status, back.body.data?.url, back.body.data?.name]).toEqual([200, shown(), 'kept']);
    const row = await stored(id);
    expect([row.url, Object.keys(row.url_sealed as object)]).toEqual([shown(), ['$enc']]);
    expect(JSON.stringify(row)).not.toMatch(secrets);
    expect(await arrived((await emitter.emit(src, orgId, { n: 2 })).id)).toEqual(['/hook?token=hook-qry-1&v=2', basic]);
  });

  it('encrypts, when the api starts, the urls of webhooks saved in plain text before, and delivers with them throughout', async () => {
    const o = client(system, owner.apiKey);
    const id = (await o.post(`/webhooks?org_id=${orgId}`, { url: url() })).body.data.id;
    // As rows were saved before urls were encrypted.
    await sql(system, 'update webhooks set url = $1, url_sealed = null where id = $2', [url(), id]);
    const src = await insertSource(system, orgId, owner.id);
    expect((await o.post(`/subscriptions?org_id=${orgId}`, { emitter_id: src, listener_id: id })).status).toBe(200);
    await subscriptionsLoaded(system);
    const arrived = async (n: number) => {
      const eventId = (await emitter.emit(src, orgId, { n })).id;
      await eventually(async () => receiver.received.some((r) => r.headers['webhook-id'] === eventId), { what: `event ${eventId} delivered` });
      return receiver.received.find((r) => r.headers['webhook-id'] === eventId)!.url;
    };
    expect(await arrived(1)).toBe('/hook?token=hook-qry-1&v=2');
    expect((await o.get(`/webhooks/${id}`)).body.data?.url).toBe(shown());
    await system.stopApp('api');
    await system.startApp('api', 'api');
    await eventually(async () => (await stored(id)).url_sealed !== null, { what: 'the url sealed' });
    const row = await stored(id);
    expect(row.url).toBe(shown());
    expect(JSON.stringify(row)).not.toMatch(secrets);
    // The delivery app reads the sealed url once the webhook changes.
    expect((await o.put(`/webhooks/${id}`, { name: 'sealed' })).status).toBe(200);
    await subscriptionsLoaded(system);
    expect(await arrived(2)).toBe('/hook?token=hook-qry-1&v=2');
  });

  it('refuses ******** for credentials it has none of to keep', async () => {
    const o = client(system, owner.apiKey);
    const masked = await o.post('/webhooks', { url: 'https://********@hooks.example.com/x' });
    expect([masked.status, masked.body.code, masked.body.details]).toEqual([400, 'invalid_request', { field: 'url' }]);
    expect(masked.body.error).toBe('url: "********" keeps the credentials stored in this webhook\'s url, and none are: give them');
    const id = (await o.post(`/webhooks?org_id=${orgId}`, { url: url() })).body.data.id;
    for (const other of ['https://********@hooks.example.com/x', receiver.url + '?token=********', shown().replace('v=2', 'v=3')]) {
      const put = await o.put(`/webhooks/${id}`, { url: other });
      expect([put.status, put.body.code, put.body.details]).toEqual([400, 'invalid_request', { field: 'url' }]);
    }
    expect((await stored(id)).url).toBe(shown());
    // Without credentials, the url is shown and kept as written.
    const plain = await o.put(`/webhooks/${id}`, { url: 'https://hooks.example.com//plain' });
    expect([plain.status, plain.body.data?.url]).toEqual([200, 'https://hooks.example.com//plain']);
  });
});
