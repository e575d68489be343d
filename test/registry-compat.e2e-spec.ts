import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleComponent } from '../apps/cli/src/bundle';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

type Summary = { id: string; event: Record<string, unknown> & { error?: { name: string; message: string } }; summary?: string };

/**
 * Real sources of Pipedream's registry, as published on the npm registry (`@pipedream/<app>`), bundled
 * the way `pd deploy` bundles them, saved, deployed and run through the real apps — one per class of
 * the compatibility sweep (`npm run bench -- registry`). The machine is offline but for package
 * registries: hooks that call the app's API fail on the network, as in the sweep.
 */
describe('registry sources as Pipedream runs them', () => {
  let system: System;
  let user: TestUser;
  let api: ReturnType<typeof client>;
  const work = mkdtempSync(join(tmpdir(), 'ess-registry-'));
  const packages = new Map<string, string>();

  /** `npm pack` of an app package (pinned: the test reads its files), unpacked. */
  const pkg = (spec: string): string => {
    const known = packages.get(spec);
    if (known) return known;
    const dir = mkdtempSync(join(work, 'pkg-'));
    const file = execFileSync('npm', ['pack', spec, '--silent', '--pack-destination', dir], { cwd: dir, encoding: 'utf8' }).trim().split('\n').pop() as string;
    execFileSync('tar', ['xzf', join(dir, file), '-C', dir]);
    packages.set(spec, join(dir, 'package'));
    return join(dir, 'package');
  };
  /** Bundles `entry` (relative to `dir`) as `pd deploy` does and saves it. */
  const saveBundled = async (dir: string, entry: string) => {
    const { code } = await bundleComponent(entry, dir);
    const res = await api.post('/components', { component_code: code });
    expect(res.body.error).toBeUndefined();
    expect(res.status).toBe(200);
    return res.body.data as { id: string; configurable_props: Record<string, unknown>[] };
  };
  const save = (spec: string, source: string) => saveBundled(pkg(spec), join('sources', source, `${source}.mjs`));
  const deploy = async (componentId: string, props: Record<string, unknown>) => {
    const res = await api.post('/sources', { component_id: componentId, configured_props: props });
    expect(res.status).toBe(200);
    return res.body.data as { id: string; configured_props: Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  const summaries = (sourceId: string, channel: string, n: number, what: string): Promise<Summary[]> =>
    eventually(
      async () => {
        const res = await api.get(`/sources/${sourceId}/event_summaries?limit=50&expand=event,summary&event_name=${encodeURIComponent(channel)}`);
        return res.status === 200 && res.body.data.length >= n ? (res.body.data as Summary[]) : undefined;
      },
      { timeoutMs: 120_000, what },
    );
  const auth = { $auth: { oauth_access_token: 'placeholder', api_token: 'placeholder', shop_id: 'placeholder' } };

  beforeAll(async () => {
    // Hooks of registry sources retry the app's API for minutes offline; a short run timeout ends them.
    system = await startSystem({ RUN_TIMEOUT_MS: '20000' });
    user = createUser(system);
    api = client(system, user.apiKey);
  });
  afterAll(async () => {
    await system?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it('a default on a required prop is its value when none is configured (apify: new finished actor run)', async () => {
    const c = await save('@pipedream/apify@0.4.0', 'new-finished-actor-run-instant');
    const actorSource = c.configurable_props.find((p) => p.name === 'actorSource');
    expect(actorSource).toMatchObject({ type: 'string', default: 'recently-used' });
    expect(actorSource?.optional).toBeUndefined();
    // actorSource has reloadProps: its additionalProps() adds the required actorId (options from Apify's API).
    const missing = await api.post('/sources', { component_id: c.id, configured_props: { apify: auth } });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('configured_props.actorId: is required (type string)');
    const src = await deploy(c.id, { apify: auth, actorId: 'a1' });
    expect(src.configured_props.actorSource).toBe('recently-used');
    expect(src.configured_props.actorId).toBe('a1');
    const props = (src as unknown as { configurable_props: { name: string }[] }).configurable_props;
    expect(props.find((p) => p.name === 'actorId')).toMatchObject({ name: 'actorId', type: 'string', label: 'Actor', remoteOptions: true });
    // Its activate hook registers a webhook with Apify: offline, its client retries until the run timeout —
    // it fails on the network, not in our module loading.
    const [err] = await summaries(src.id, '$errors', 1, 'the activate hook error');
    expect(err.event.error?.name).toBe('TimeoutError');
    // Its HTTP interface answers and emits the webhook's body (customResponse).
    const url = src.configured_props.http.endpoint_url as string;
    const body = { eventType: 'ACTOR.RUN.SUCCEEDED', userId: 'u1', createdAt: '2026-01-02T03:04:05.000Z', eventData: { actorId: 'a1', actorRunId: 'run-1' } };
    const res = await eventually(async () => {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return r.status === 200 ? r : undefined;
    }, { timeoutMs: 60_000, what: 'the endpoint' });
    expect(res.status).toBe(200);
    const [ev] = await summaries(src.id, '', 1, 'the emitted run');
    expect(ev.event).toEqual(body);
    expect(ev.summary).toBe('A new Actor run run-1 has finished');
  });

  it("$.interface.apphook with static eventNames: events posted to the app's hook channel run the source (shopify: customer data request)", async () => {
    const c = await save('@pipedream/shopify@1.0.1', 'customer-data-request');
    expect(c.configurable_props.find((p) => p.name === 'shopifyApphook')).toEqual({ name: 'shopifyApphook', type: '$.interface.apphook', appProp: 'shopify', eventNames: ['customers/data_request'] });
    const src = await deploy(c.id, { shopify: auth });
    const other = await api.post('/apps/shopify/hook_events', { event_name: 'orders/create', event: { body: { id: 1 } } });
    expect(other.status).toBe(202);
    expect(other.body.data.delivered).toEqual([]);
    const posted = await api.post('/apps/shopify/hook_events', { event_name: 'customers/data_request', event: { body: { shop_id: 7, customer: { id: 42 } } } });
    expect(posted.status).toBe(202);
    expect(posted.body.data.delivered).toEqual([{ source_id: src.id, invocation_id: expect.any(String) }]);
    const [ev] = await summaries(src.id, '', 1, 'the app hook event');
    expect(ev.event).toEqual({ shop_id: 7, customer: { id: 42 } });
    expect(ev.summary).toBe('Customer has requested information');
    // One source directly; an event name it does not listen to is refused.
    const wrong = await api.post(`/sources/${src.id}/app_hook`, { event_name: 'orders/create', event: { body: {} } });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toMatchObject({ code: 'unknown_event_name', error: expect.stringContaining('"customers/data_request"') });
    const direct = await api.post(`/sources/${src.id}/app_hook`, { event_name: 'customers/data_request', event: { body: { shop_id: 8 } } });
    expect(direct.status).toBe(202);
    await summaries(src.id, '', 2, 'the direct app hook event');
    // Another account's post reaches none of these sources.
    const stranger = client(system, createUser(system).apiKey);
    const theirs = await stranger.post('/apps/shopify/hook_events', { event_name: 'customers/data_request', event: { body: {} } });
    expect(theirs.body.data.delivered).toEqual([]);
    expect((await stranger.post(`/sources/${src.id}/app_hook`, { event: { body: {} } })).status).toBe(404);
  });

  it('$.interface.apphook with an eventNames() method, asked in the sandbox (slack: new channel created)', async () => {
    const c = await save('@pipedream/slack@0.10.3', 'new-channel-created');
    expect(c.configurable_props.find((p) => p.name === 'slackApphook')).toMatchObject({ type: '$.interface.apphook', appProp: 'slack', remoteEventNames: true });
    const src = await deploy(c.id, { slack: auth });
    const skipped = await api.post('/apps/slack/hook_events', { event_name: 'message', event: { type: 'message' } });
    expect(skipped.body.data.delivered).toEqual([]);
    const posted = await api.post('/apps/slack/hook_events', { event_name: 'channel_created', event: { type: 'channel_created', event_ts: '1700000000.000100', channel: { id: 'C1', name: 'general-2' } } });
    expect(posted.body.data.delivered).toEqual([{ source_id: src.id, invocation_id: expect.any(String) }]);
    const [ev] = await summaries(src.id, '', 1, 'the slack event');
    expect(ev.event).toMatchObject({ type: 'channel_created', channel: { id: 'C1', name: 'general-2' } });
    expect(ev.summary).toBe('New channel created - general-2');
  });

  it('a default import of a CommonJS package that sets __esModule binds module.exports (notion: new page; its deploy hook builds a notion.Client)', async () => {
    const c = await save('@pipedream/notion@1.0.6', 'new-page');
    const src = await deploy(c.id, { notion: auth, dataSourceId: 'placeholder-data-source' });
    // deploy() calls the Notion API through `new notion.Client(...)`: offline it fails on the network,
    // where a wrong binding failed with "Cannot read properties of undefined (reading 'Client')".
    const [err] = await summaries(src.id, '$errors', 1, 'the deploy hook error');
    expect(err.event.error?.message).not.toMatch(/undefined|not a constructor|not a function/);
    expect(err.event.error?.message).toMatch(/ENOTFOUND|EAI_AGAIN|ECONNREFUSED|fetch failed|getaddrinfo|request to .* failed|connect/i);
  });

  it('imports in local files follow Node: a default import of webpack CommonJS binds module.exports, a named import of a dual package gives its class', async () => {
    // test/fixtures/module-interop: the import lines of Pipedream's salesforce_rest_api (salesforce-webhooks, whose
    // module.exports carries Symbol.toStringTag "Module") and polar (@polar-sh/sdk, ESM with a CommonJS build),
    // in local files of the source, with the real packages installed by the service from the npm registry.
    const c = await saveBundled(join(__dirname, 'fixtures', 'module-interop'), join('sources', 'hooked', 'hooked.mjs'));
    const src = await deploy(c.id, { app: { $auth: {} } });
    // The deploy hook reports what it got as its error's message.
    const [err] = await summaries(src.id, '$errors', 1, 'the deploy hook report');
    const message = err.event.error?.message ?? '';
    expect(message).toMatch(/^bindings /);
    expect(JSON.parse(message.slice('bindings '.length))).toEqual({ salesforceCreate: 'function', polar: 'Polar' });
  }, 300_000);

  it('a dir prop (File Stash) is accepted and takes no value (microsoft_outlook: new attachment received)', async () => {
    const c = await save('@pipedream/microsoft_outlook@1.7.5', 'new-attachment-received');
    expect(c.configurable_props.find((p) => p.name === 'dir')).toMatchObject({ type: 'dir', accessMode: 'write' });
    const src = await deploy(c.id, { microsoftOutlook: auth });
    expect(src.configured_props.dir).toBeUndefined();
  });

  it("a static timer is the component's own schedule: deployed without a value, a value given is not used (google_drive: new files instant)", async () => {
    const c = await save('@pipedream/google_drive@1.4.1', 'new-files-instant');
    // Its push-notification renewal: `static` and `hidden`, so Pipedream's forms never ask for it.
    expect(c.configurable_props.find((p) => p.name === 'timer')).toMatchObject({ type: '$.interface.timer', static: { intervalSeconds: 82080 }, hidden: true });
    const src = await deploy(c.id, { googleDrive: auth });
    expect(src.configured_props.timer).toEqual({ cron: null, interval_seconds: 82080 });
    const given = await deploy(c.id, { googleDrive: auth, timer: { intervalSeconds: 900 } });
    expect(given.configured_props.timer).toEqual({ cron: null, interval_seconds: 82080 });
  });

  it('a pinned npm version the registry lacks is a save error naming the package and the version', async () => {
    const code = 'import isNumber from "is-number@99.0.0";\nexport default { name: "pinned", version: "1", async run() { this.$emit({ n: isNumber(1) }) } };';
    const res = await api.post('/components', { component_code: code });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain('the npm registry has no version of is-number matching "99.0.0" (ETARGET): the component imports is-number@99.0.0');
  });
});
