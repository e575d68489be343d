import { admin, client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { Receiver, subscriptionsLoaded } from './events.helpers';

/**
 * Subscriptions route while their owner can still reach both ends (apps/delivery/src/router/subscription-cache.ts):
 * a member removed from an org stops receiving the org's workflow events through the subscriptions they
 * made while a member (exact `p_…` or the org's `p_*`), while the org's own routes keep working.
 */
const EMIT = `export default defineComponent({
  async run({ steps, $ }) { $.send.emit({ raw_event: { n: steps.trigger.event.n } }); },
});`;

describe('subscriptions after an org membership ends', () => {
  let system: System;
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    system = await startSystem({ DELIVERY_METRICS_PORT: String(await freePort()) });
  });
  afterAll(async () => {
    for (const r of receivers) await r.stop();
    await system?.stop();
  });

  const receiver = async (): Promise<Receiver> => {
    const r = await new Receiver().start();
    receivers.push(r);
    return r;
  };
  const numbers = (r: Receiver): string[] => r.received.map((x) => /"n":(\d+)/.exec(x.body)?.[1] ?? '?');
  const loaded = async (): Promise<number> => ((await (await fetch(`http://127.0.0.1:${system.env.DELIVERY_METRICS_PORT}/healthz`)).json()) as { subscriptions: number }).subscriptions;

  it("a removed member's routes of the org's workflow stop; the org's own keep working", async () => {
    const leaver = createUser(system);
    const stayer = createUser(system);
    const org = admin(system, ['orgs', 'create', '--name', 'Routes', '--orgname', `routes-${leaver.id.slice(2, 12).toLowerCase()}`]);
    for (const u of [leaver, stayer]) admin(system, ['orgs', 'add-member', '--org', org.id, '--user', u.id]);
    const l = client(system, leaver.apiKey);
    const s = client(system, stayer.apiKey);
    const wf = (await l.post(`/workflows?org_id=${org.id}`, { name: 'org-flow', trigger: { manual: {} }, steps: [{ name: 'emit', code: EMIT }] })).body.data;
    expect(wf.owner_id).toBe(org.id);

    const [exact, glob, orgs] = [await receiver(), await receiver(), await receiver()];
    const hook = async (c: typeof l, r: Receiver, orgId?: string) => (await c.post(`/webhooks${orgId ? `?org_id=${orgId}` : ''}`, { url: r.url })).body.data.id as string;
    // The leaver's own webhooks: one fed by the workflow itself, one by the org's p_* glob (owned by the org).
    expect((await l.post(`/subscriptions?emitter_id=${wf.id}&listener_id=${await hook(l, exact)}`)).status).toBe(200);
    expect((await l.post(`/subscriptions?emitter_id=p_*&listener_id=${await hook(l, glob)}&org_id=${org.id}`)).status).toBe(200);
    expect((await s.post(`/subscriptions?emitter_id=${wf.id}&listener_id=${await hook(s, orgs, org.id)}`)).status).toBe(200);
    await subscriptionsLoaded(system);
    const before = await loaded();
    expect((await l.get(`/workflows/${wf.id}/event_summaries`)).status).toBe(200);

    expect((await s.post(`/workflows/${wf.id}/run`, { event: { n: 1 } })).status).toBe(202);
    await eventually(async () => exact.received.length && glob.received.length && orgs.received.length, { what: 'the first event at all three webhooks', timeoutMs: 30_000 });

    expect(admin(system, ['orgs', 'remove-member', '--org', org.id, '--user', leaver.id]).removed).toBe(true);
    // The org's workflow is gone for them on the next request.
    for (const res of [await l.get(`/workflows/${wf.id}`), await l.post(`/workflows/${wf.id}/run`, { event: { n: 9 } }), await l.get(`/workflows/${wf.id}/event_summaries`), await l.get(`/orgs/${org.id}/workflows`)]) {
      expect([res.status, res.body.code]).toEqual([404, 'not_found']);
    }
    expect((await fetch(`${system.origin}/sse/p/${wf.id}/emits`, { headers: { authorization: `Bearer ${leaver.apiKey}` } })).status).toBe(404);
    // The next reload of subscriptions (any change to them, or every 30 s) leaves the leaver's two routes out.
    const other = await receiver();
    expect((await s.post(`/subscriptions?emitter_id=${wf.id}&listener_id=${await hook(s, other, org.id)}`)).status).toBe(200);
    await eventually(async () => (await loaded()) === before + 1 - 2, { what: 'the delivery app to reload subscriptions' });

    expect((await s.post(`/workflows/${wf.id}/run`, { event: { n: 2 } })).status).toBe(202);
    await eventually(async () => orgs.received.length === 2 && other.received.length === 1, { what: 'the second event at the org webhooks', timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 1_000));
    expect([numbers(exact), numbers(glob), numbers(orgs), numbers(other)]).toEqual([['1'], ['1'], ['1', '2'], ['2']]);
    // Back in the org, the routes they made apply again.
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', leaver.id]);
    expect((await s.post(`/subscriptions?emitter_id=${wf.id}&listener_id=${await hook(s, await receiver(), org.id)}`)).status).toBe(200);
    await eventually(async () => (await loaded()) === before + 2, { what: 'the routes back' });
  });
});
