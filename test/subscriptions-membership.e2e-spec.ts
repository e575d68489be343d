import { admin, client, createUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { receiversOfBlock } from './support/webhook-receivers';
import { Receiver, sql, subscriptionsLoaded } from './events.helpers';

/**
 * Subscriptions route while their owner can still reach both ends (apps/delivery/src/router/route-queries.ts):
 * a member removed from an org stops receiving the org's workflow events through the subscriptions they
 * made while a member (exact `p_…` or the org's `p_*`), while the org's own routes keep working; the same for
 * the routes an auto-subscription they made gives the org's new sources towards another org of theirs.
 */
const EMIT = `export default defineComponent({
  async run({ steps, $ }) { $.send.emit({ raw_event: { n: steps.trigger.event.n } }); },
});`;
/** A source that writes a log line and throws on every request: one `$logs` and one `$errors` event each. */
const LOGS_AND_THROWS = `module.exports = {
  name: "Leaky", version: "1",
  props: { http: { type: "$.interface.http" } },
  async run(event) { console.log("log " + event.body.n); throw new Error("boom " + event.body.n); },
};`;

describe('subscriptions after an org membership ends', () => {
  let system: System;

  const receiver = receiversOfBlock();

  beforeAll(async () => {
    system = await startSystem({ DELIVERY_METRICS_PORT: String(await freePort()) });
  });
  afterAll(async () => {
    await system?.stop();
  });

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
    // A workflow's event reaches a webhook as its event summary shows it (docs/webhooks.md, "The request").
    expect([exact.received[0].body, exact.received[0].headers['x-pd-emitter-id']]).toEqual(['{"raw_event":{"n":1}}', wf.id]);

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

  /** Two orgs, Acme and Beta, with alice in both and carol in Beta; an Acme webhook of alice's, a Beta webhook of carol's. */
  const acmeAndBeta = async () => {
    const alice = createUser(system);
    const carol = createUser(system);
    const tag = alice.id.slice(2, 12).toLowerCase();
    const acme = admin(system, ['orgs', 'create', '--name', 'Acme', '--orgname', `acme-${tag}`]);
    const beta = admin(system, ['orgs', 'create', '--name', 'Beta', '--orgname', `beta-${tag}`]);
    admin(system, ['orgs', 'add-member', '--org', acme.id, '--user', alice.id]);
    for (const u of [alice, carol]) admin(system, ['orgs', 'add-member', '--org', beta.id, '--user', u.id]);
    const a = client(system, alice.apiKey);
    const c = client(system, carol.apiKey);
    const [acmeHook, betaHook] = [await receiver(), await receiver()];
    const who2: string = (await a.post(`/webhooks?org_id=${acme.id}`, { url: acmeHook.url })).body.data.id;
    const own: string = (await c.post(`/webhooks?org_id=${beta.id}`, { url: betaHook.url })).body.data.id;
    // Beta's own route for its new sources' logs and errors: it keeps working throughout, and tells when they came.
    for (const ch of ['$logs', '$errors']) expect((await c.post(`/auto_subscriptions?org_id=${beta.id}&event_name=${ch}&listener_id=${own}`)).status).toBe(200);
    /** A new Beta source of carol's: its id and endpoint URL. */
    const newSource = async (name: string): Promise<{ id: string; url: string }> => {
      const src = (await c.post(`/sources?org_id=${beta.id}`, { component_code: LOGS_AND_THROWS, name })).body.data;
      return { id: src.id, url: src.configured_props.http.endpoint_url };
    };
    return { alice, beta, a, acmeHook, betaHook, who2, newSource };
  };
  const send = async (url: string, n: number): Promise<void> => {
    expect((await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) })).status).toBe(200);
  };
  /** The `<channel>:<n>` of the events a receiver got from one emitter. */
  const from = (r: Receiver, emitterId: string): string[] =>
    r.received.filter((x) => x.headers['x-pd-emitter-id'] === emitterId).map((x) => `${String(x.headers['x-pd-event-name'])}:${/(?:log|boom) (\d+)/.exec(x.body)?.[1] ?? '?'}`).sort();
  /** Waits for both of a request's events at Beta's own webhook, then a moment for any other webhook fed by the same routes. */
  const arrived = async (r: Receiver, emitterId: string, n: number): Promise<void> => {
    await eventually(async () => from(r, emitterId).includes(`$errors:${n}`) && from(r, emitterId).includes(`$logs:${n}`), { what: `the $logs and $errors of request ${n} at Beta's webhook`, timeoutMs: 60_000 });
    await new Promise((done) => setTimeout(done, 1_000));
  };

  it("an auto-subscription to another org's webhook stops feeding it when its maker leaves the org", async () => {
    const { alice, beta, a, acmeHook, betaHook, who2, newSource } = await acmeAndBeta();
    for (const ch of ['$logs', '$errors']) expect((await a.post(`/auto_subscriptions?org_id=${beta.id}&event_name=${ch}&listener_id=${who2}`)).status).toBe(200);

    // While alice belongs to both orgs, Beta's new sources send their logs and errors to Acme's webhook.
    const before = await newSource('before');
    await subscriptionsLoaded(system);
    const loadedBefore = await loaded();
    await send(before.url, 1);
    await arrived(betaHook, before.id, 1);
    expect(from(acmeHook, before.id)).toEqual(['$errors:1', '$logs:1']);

    expect(admin(system, ['orgs', 'remove-member', '--org', beta.id, '--user', alice.id]).removed).toBe(true);
    // A source Beta creates afterwards: its auto-subscriptions are alice's, who is no longer in Beta.
    const after = await newSource('after');
    await send(after.url, 2);
    await arrived(betaHook, after.id, 2);
    expect(from(acmeHook, after.id)).toEqual([]);

    // The source made before she left stops too, once the delivery app has read the membership change
    // (alice's two routes out, the new source's two routes to Beta's webhook in).
    await eventually(async () => (await loaded()) === loadedBefore, { what: "alice's routes left out" });
    await send(before.url, 3);
    await arrived(betaHook, before.id, 3);
    expect(from(acmeHook, before.id)).toEqual(['$errors:1', '$logs:1']);
    expect(from(betaHook, before.id)).toEqual(['$errors:1', '$errors:3', '$logs:1', '$logs:3']);
  });

  it('an auto-subscription between two orgs whose maker is unknown (made before they were recorded) feeds no other org until a member of both makes it again', async () => {
    const { alice, beta, a, acmeHook, betaHook, who2, newSource } = await acmeAndBeta();
    for (const ch of ['$logs', '$errors']) expect((await a.post(`/auto_subscriptions?org_id=${beta.id}&event_name=${ch}&listener_id=${who2}`)).status).toBe(200);
    await sql(system, 'update auto_subscriptions set created_by = null where listener_id = $1', [who2]);

    const unknown = await newSource('unknown');
    await send(unknown.url, 1);
    await arrived(betaHook, unknown.id, 1);
    expect(from(acmeHook, unknown.id)).toEqual([]);

    // Made again by alice, a member of both: it records her, and Beta's next sources feed Acme's webhook.
    const again = await a.post(`/auto_subscriptions?org_id=${beta.id}&event_name=$errors&listener_id=${who2}`);
    expect(again.status).toBe(200);
    expect((await sql(system, 'select event_name, created_by from auto_subscriptions where listener_id = $1 order by event_name', [who2]))).toEqual([
      { event_name: '$errors', created_by: alice.id },
      { event_name: '$logs', created_by: null },
    ]);
    const known = await newSource('known');
    await send(known.url, 2);
    await arrived(betaHook, known.id, 2);
    expect(from(acmeHook, known.id)).toEqual(['$errors:2']);
  });
});
