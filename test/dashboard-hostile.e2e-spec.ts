import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { admin, client, createUser, TestUser } from './support/accounts';
import { launchBrowser } from './support/browser';
import { eventually, startSystem, System } from './support/system';

/**
 * The dashboard as a hostile org member sees it: member B plants markup, script, `javascript:` URLs
 * and CSS everywhere the org's pages show B's data (source, component and prop texts, options(),
 * events, `$logs` and `$errors`, webhooks, workflows and their steps, error messages the API echoes),
 * and member A opens every page of the org. Each payload would set `window.__pwned` or request a local
 * beacon server: neither happens, no content security policy violation is even reported (nothing was
 * parsed as markup), no link leads anywhere but the dashboard, and each string is shown as text.
 */
describe('dashboard: another org member\'s hostile content', () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;
  let orgId: string;
  let browser: Browser;
  let page: Page;
  let beacon: Server;
  let beaconUrl: string;
  const hits: string[] = [];
  const violations: string[] = [];
  const pageErrors: string[] = [];

  /** Every kind of injection, tagged so a report says where it came from; each would set window.__pwned or call the beacon. */
  const hostile = (tag: string): string =>
    [
      `<img src=x onerror="window.__pwned=(window.__pwned||[]).concat('${tag}');fetch('${beaconUrl}/${tag}-img')">`,
      `</script><script>window.__pwned=['${tag}-script']</script>`,
      `<svg onload="window.__pwned=['${tag}-svg']"></svg>`,
      `<a href="javascript:window.__pwned=['${tag}-link']">${tag}-link</a>`,
      `<style>*{background:url(${beaconUrl}/${tag}-css)}</style>`,
      `<iframe srcdoc="<script>parent.__pwned=['${tag}-iframe']</script>"></iframe>`,
    ].join(' ');
  const jsUrl = (tag: string): string => `javascript:window.__pwned=['${tag}-url']//`;

  beforeAll(async () => {
    beacon = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.end('ok');
    });
    await new Promise<void>((r) => beacon.listen(0, '127.0.0.1', r));
    beaconUrl = `http://127.0.0.1:${(beacon.address() as AddressInfo).port}`;
    system = await startSystem();
    a = createUser(system);
    b = createUser(system);
    orgId = admin(system, ['orgs', 'create', '--name', hostile('org').slice(0, 200), '--orgname', `hostile-${a.id.slice(2, 14).toLowerCase()}`]).id;
    admin(system, ['orgs', 'add-member', '--org', orgId, '--user', a.id]);
    admin(system, ['orgs', 'add-member', '--org', orgId, '--user', b.id]);
    browser = await launchBrowser();
    page = await browser.newPage();
    page.setDefaultTimeout(30_000);
    page.on('console', (m) => /Content Security Policy/i.test(m.text()) && violations.push(m.text()));
    page.on('pageerror', (e) => pageErrors.push(e.message));
  });
  afterAll(async () => {
    await browser?.close();
    await system?.stop();
    await new Promise((r) => beacon?.close(r));
  });

  const asB = () => client(system, b.apiKey);
  const withOrg = (path: string) => `${path}${path.includes('?') ? '&' : '?'}org_id=${orgId}`;
  const signInA = async (path: string): Promise<void> => {
    await page.goto(`${system.origin}/ui/`);
    await page.evaluate(`sessionStorage.setItem('ess.apiKey', ${JSON.stringify(a.apiKey)}); sessionStorage.setItem('ess.orgId', ${JSON.stringify(orgId)})`);
    await page.goto(`${system.origin}/ui${path}`);
  };
  /** Opens every disclosure of the page (events' JSON, steps, props, delivery attempts). */
  const openAll = async (): Promise<void> => {
    await page.evaluate('document.querySelectorAll("details").forEach((d) => { d.open = true; })');
  };
  const ranNothing = async (): Promise<void> => {
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(await page.locator('main img, main script, main svg[onload], main iframe, main style, main a[href^="javascript:" i]').count()).toBe(0);
    // Every link of the page leads to the dashboard itself.
    const hrefs = (await page.locator('a[href]').evaluateAll((els) => els.map((e) => e.getAttribute('href')))) as string[];
    for (const h of hrefs) expect([h, h.startsWith('/ui/') || h.startsWith('#')]).toEqual([h, true]);
    expect(violations).toEqual([]);
    expect(pageErrors).toEqual([]);
    expect(hits).toEqual([]);
  };

  it("shows B's source, component, props, options, events, logs and errors to A as text", async () => {
    const code = `module.exports = {
  name: ${JSON.stringify(hostile('component-name').slice(0, 200))}, version: "1",
  description: ${JSON.stringify(hostile('component-description'))},
  props: {
    http: "$.interface.http",
    note: { type: "alert", alertType: "info", content: ${JSON.stringify(hostile('alert'))} },
    pick: { type: "string", label: ${JSON.stringify(hostile('label').slice(0, 180))}, description: ${JSON.stringify(hostile('description'))},
      options: [{ label: ${JSON.stringify(hostile('option'))}, value: ${JSON.stringify(jsUrl('option-value'))} }, ${JSON.stringify(hostile('plain-option'))}] },
    remote: { type: "string", label: "remote", optional: true, async options() { return [{ label: ${JSON.stringify(hostile('remote-option'))}, value: "r" }]; } },
  },
  async run(event) {
    console.log(${JSON.stringify(hostile('log'))});
    if (event && event.body && event.body.fail) throw new Error(${JSON.stringify(hostile('error'))});
    this.$emit({ html: ${JSON.stringify(hostile('emit'))}, url: ${JSON.stringify(jsUrl('emit'))}, request: event && event.body }, { summary: ${JSON.stringify(hostile('summary'))} });
  },
};`;
    const created = await asB().post(withOrg('/sources'), { component_code: code, name: hostile('source').slice(0, 200), configured_props: { pick: jsUrl('option-value') } });
    expect([created.status, created.text.slice(0, 300)]).toEqual([200, expect.any(String)]);
    const source = created.body.data;
    const endpoint = source.configured_props.http.endpoint_url as string;
    // An anonymous caller of the endpoint plants its own payload too.
    await eventually(async () => (await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ html: hostile('request') }) })).status === 200, { what: 'the endpoint to take a request' });
    await eventually(async () => (await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ fail: true }) })).status === 200, { what: 'the failing request' });
    const events = (name?: string) => asB().get(withOrg(`/sources/${source.id}/event_summaries${name ? `?event_name=${name}` : ''}`));
    await eventually(async () => (await events()).body.data.length > 0 && (await events('$errors')).body.data.length > 0 && (await events('$logs')).body.data.length > 0, { what: 'the emit, $logs and $errors', timeoutMs: 30_000 });

    // The org's sources, searched too.
    await signInA('/');
    await page.getByRole('link', { name: hostile('source').slice(0, 200) }).waitFor();
    await page.locator('#source-search').fill('<img');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: hostile('source').slice(0, 200) }).waitFor();
    await ranNothing();

    // The source: its name, props, events (expanded), logs and errors.
    await signInA(`/sources/${source.id}`);
    await page.getByRole('heading', { name: hostile('source').slice(0, 200) }).waitFor();
    await page.locator('#panel-events').getByText(hostile('summary').slice(0, 100)).first().waitFor();
    await openAll();
    await page.locator('#panel-events pre').getByText(/request-img/).first().waitFor();
    await page.getByRole('tab', { name: /Logs and errors/ }).click();
    await page.locator('#panel-logs').getByText(/log-img/).first().waitFor();
    await page.locator('#panel-logs').getByText(/error-img/).first().waitFor();
    await openAll();
    await ranNothing();

    // Its edit form: B's labels, descriptions, alert, static and async options.
    await signInA(`/sources/${source.id}/edit`);
    await page.getByText(hostile('description')).first().waitFor();
    await page.getByText(hostile('alert')).first().waitFor();
    // An option's label shows its first 200 characters.
    const label = (text: string) => (text.length > 200 ? `${text.slice(0, 199)}…` : text);
    expect(await page.locator('select option').allTextContents()).toEqual(expect.arrayContaining([label(hostile('option')), label(hostile('plain-option'))]));
    await page.getByRole('button', { name: 'Load options' }).click();
    await eventually(async () => (await page.locator('select option').allTextContents()).includes(label(hostile('remote-option'))), { what: 'the async options' });
    await ranNothing();

    // An address holding markup: the API's error echoes it, shown as text.
    await signInA(`/sources/${encodeURIComponent(hostile('address'))}`);
    await page.getByRole('alert').first().waitFor();
    await ranNothing();
  }, 240_000);

  it("shows B's workflow, its steps, runs, logs and errors to A as text", async () => {
    const step = `export default defineComponent({
  props: { note: { type: "string", label: ${JSON.stringify(hostile('step-label').slice(0, 180))} } },
  async run({ steps, $ }) {
    console.log(${JSON.stringify(hostile('wf-log'))});
    $.export("html", ${JSON.stringify(hostile('export'))});
    $.send.emit({ raw_event: { html: ${JSON.stringify(hostile('wf-emit'))} } });
    if (steps.trigger.event.fail) throw new Error(${JSON.stringify(hostile('wf-error'))});
    return ${JSON.stringify(hostile('return'))};
  },
});`;
    const res = await asB().post(withOrg('/workflows'), { name: hostile('wf').slice(0, 200), trigger: { manual: {} }, steps: [{ name: 'hostile', code: step, props: { note: hostile('step-prop') } }] });
    expect([res.status, res.text.slice(0, 300)]).toEqual([200, expect.any(String)]);
    const wf = res.body.data;
    expect((await asB().post(withOrg(`/workflows/${wf.id}/run`), { event: { html: hostile('wf-event') } })).status).toBe(202);
    expect((await asB().post(withOrg(`/workflows/${wf.id}/run`), { event: { fail: true } })).status).toBe(202);
    await eventually(async () => (await asB().get(withOrg(`/workflows/${wf.id}/$errors/event_summaries`))).body.data.length > 0 && (await asB().get(withOrg(`/workflows/${wf.id}/runs`))).body.data.length > 1, { what: 'both runs', timeoutMs: 30_000 });

    await signInA('/workflows');
    await page.getByRole('link', { name: hostile('wf').slice(0, 200) }).waitFor();
    await ranNothing();
    await signInA(`/workflows/${wf.id}`);
    await page.getByRole('heading', { name: hostile('wf').slice(0, 200) }).waitFor();
    await page.locator('#panel-runs').getByText(/wf-error-img/).first().waitFor();
    await openAll();
    await page.getByText(/step-prop-img/).first().waitFor();
    await page.getByText(/return-img/).first().waitFor();
    for (const tab of ['Emitted events', 'Logs and errors']) {
      await page.getByRole('tab', { name: new RegExp(tab) }).click();
      await openAll();
    }
    await page.locator('#panel-logs').getByText(/wf-log-img/).first().waitFor();
    await ranNothing();
  }, 240_000);

  it("shows B's webhook names and URLs to A as text, never as links", async () => {
    for (const [url, name] of [
      [`https://hooks.example.com/in?x=${encodeURIComponent(hostile('hook-url'))}`, hostile('hook-name').slice(0, 255)],
      [`https://hooks.example.com/"><img src=x onerror="window.__pwned=1">`, jsUrl('hook-name')],
      [jsUrl('hook-url'), 'javascript-url'],
    ]) {
      const res = await asB().post(withOrg('/webhooks'), { url, name });
      // A javascript: URL is refused by the API; the others are kept as given.
      if (url.startsWith('javascript:')) expect(res.status).toBe(400);
      else expect([res.status, res.text.slice(0, 300)]).toEqual([200, expect.any(String)]);
    }
    await signInA('/webhooks');
    await page.getByRole('heading', { name: hostile('hook-name').slice(0, 255) }).waitFor();
    await page.getByRole('heading', { name: jsUrl('hook-name') }).waitFor();
    await openAll();
    await ranNothing();
    // What A types comes back from the API (the new webhook, or the API's refusal): text too.
    await page.locator('#webhook-url').fill(`https://x.example/${hostile('typed')}`);
    await page.locator('#webhook-name').fill(hostile('typed-name').slice(0, 255));
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByRole('alert').or(page.getByRole('status')).first().waitFor();
    await ranNothing();
  });

  it("shows a search over B's many sources a page at a time, loading only that page's details", async () => {
    const component = await asB().post(withOrg('/components'), { component_code: 'module.exports = { name: "many", version: "1", props: {}, async run() {} };' });
    expect(component.status).toBe(200);
    for (let i = 0; i < 45; i++) expect((await asB().post(withOrg('/sources'), { component_id: component.body.data.id, name: `many-${String(i).padStart(2, '0')}` })).status).toBe(200);
    await signInA('/');
    await page.getByRole('heading', { name: 'Sources', exact: true }).waitFor();
    await page.locator('#source-search').fill('many-');
    // From the search on, the rows' reads of their last event and $errors (two per row shown).
    const requests: string[] = [];
    const count = (r: { url(): string }) => /\/event_summaries/.test(r.url()) && requests.push(r.url());
    page.on('request', count);
    try {
      await page.getByRole('button', { name: 'Search' }).click();
      const rows = page.locator('table.sources tbody tr');
      await page.getByText('1–20 of 45 matches').waitFor();
      expect(await rows.count()).toBe(20);
      await eventually(async () => (await rows.locator('td[data-label="Last event"]').allTextContents()).every((t) => t !== '…'), { what: 'the rows shown to load' });
      expect(requests.length).toBeLessThanOrEqual(40);
    } finally {
      page.off('request', count);
    }
    const pager = page.getByRole('navigation', { name: 'Pages of matching sources' });
    await pager.getByRole('button', { name: 'Older' }).click();
    await page.getByText('21–40 of 45 matches').waitFor();
    await pager.getByRole('button', { name: 'Older' }).click();
    await page.getByText('41–45 of 45 matches').waitFor();
    expect(await page.locator('table.sources tbody tr').count()).toBe(5);
    expect(await pager.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true);
    await pager.getByRole('button', { name: 'Newer' }).click();
    await page.getByText('21–40 of 45 matches').waitFor();
    await ranNothing();
  }, 240_000);

  it("shows the many subscriptions of B's webhook 20 at a time, with a button for 20 more", async () => {
    const hook = await asB().post(withOrg('/webhooks'), { url: 'https://hooks.example.com/many', name: 'many subscriptions' });
    expect(hook.status).toBe(200);
    // Channels named by B, the last one hostile: shown as text like the rest.
    const channels = Array.from({ length: 45 }, (_, i) => (i === 44 ? hostile('channel').slice(0, 255) : `ch-${String(i).padStart(2, '0')}`));
    for (const event_name of channels) expect((await asB().post(withOrg('/subscriptions'), { emitter_id: 'dc_*', listener_id: hook.body.data.id, event_name })).status).toBe(200);
    await signInA('/webhooks');
    const card = page.getByRole('article', { name: 'Webhook many subscriptions' });
    const rows = card.locator('ul.subs li');
    await card.getByText('20 of 45 subscriptions shown').waitFor();
    expect(await rows.count()).toBe(20);
    expect(await rows.first().textContent()).toContain('ch-00');
    const more = card.getByRole('button', { name: /^Show \d+ more subscriptions$/ });
    expect(await more.textContent()).toBe('Show 20 more subscriptions');
    await more.click();
    await card.getByText('40 of 45 subscriptions shown').waitFor();
    expect(await rows.count()).toBe(40);
    expect(await more.textContent()).toBe('Show 5 more subscriptions');
    await more.click();
    await card.getByText(channels[44]).waitFor();
    expect(await rows.count()).toBe(45);
    expect(await more.count()).toBe(0);
    await ranNothing();
  }, 240_000);

  it("cuts B's huge prop texts in A's edit form", async () => {
    const big = (tag: string) => `${tag}:${'x'.repeat(300 * 1024)}`;
    const code = `module.exports = {
  name: "huge props", version: "1",
  props: {
    note: { type: "alert", alertType: "info", content: ${JSON.stringify(big('alert'))} },
    pick: { type: "string", label: "pick", options: [{ label: ${JSON.stringify(big('option'))}, value: "a" }, ${JSON.stringify(big('plain'))}] },
    remote: { type: "string", label: "remote", optional: true, async options() { return [{ label: ${JSON.stringify(big('remote'))}, value: "r" }]; } },
    broken: { type: "string", label: "broken", optional: true, async options() { throw new Error(${JSON.stringify(big('thrown'))}); } },
  },
  async run() {},
};`;
    const created = await asB().post(withOrg('/sources'), { component_code: code, name: 'huge props', configured_props: { pick: 'a' } });
    expect([created.status, created.text.slice(0, 300)]).toEqual([200, expect.any(String)]);
    await signInA(`/sources/${created.body.data.id}/edit`);
    await page.getByText(/^alert:x{100}/).first().waitFor();
    await page.getByRole('button', { name: 'Load options' }).first().click();
    await eventually(async () => (await page.locator('select option').allTextContents()).some((t) => t.startsWith('remote:')), { what: 'the async options' });
    // options() that throws a 300 KB message (the remote prop's button now reads Load more options): the API's error, cut too.
    await page.getByRole('button', { name: 'Load options', exact: true }).click();
    const thrown = page.getByRole('alert').filter({ hasText: 'thrown:' });
    await thrown.waitFor();
    const texts = [...(await page.locator('select option').allTextContents()), (await page.getByText(/^alert:x{100}/).first().textContent()) ?? '', (await thrown.textContent()) ?? ''];
    for (const t of texts) expect(t.length).toBeLessThanOrEqual(2100);
    expect(texts.filter((t) => t.includes('…')).length).toBe(5);
    // 1.2 MB of B's text in the component (its code, in the editor, holds all of it); a form of a few KB.
    expect(await page.evaluate('document.querySelector("fieldset.props").textContent.length')).toBeLessThan(10_000);
    await ranNothing();
  }, 240_000);

  it("keeps A's page of B's deeply nested events usable", async () => {
    const code = `module.exports = {
  name: "deep", version: "1",
  props: {},
  async run(event) {
    let v = { depth: event.depth };
    for (let i = 0; i < event.depth; i++) v = [v];
    this.$emit(v, { summary: "depth " + event.depth });
  },
};`;
    const created = await asB().post(withOrg('/sources'), { component_code: code, name: 'deep' });
    expect([created.status, created.text.slice(0, 300)]).toEqual([200, expect.any(String)]);
    const id = created.body.data.id as string;
    const depths = [500, 1000, 1500, 2000, 2500, 3000];
    for (const depth of depths) expect((await asB().post(withOrg(`/sources/${id}/run`), { event: { depth } })).status).toBeLessThan(300);
    const settled = await eventually(async () => {
      const [emits, errors] = await Promise.all([asB().get(withOrg(`/sources/${id}/event_summaries`)), asB().get(withOrg(`/sources/${id}/event_summaries?event_name=$errors`))]);
      return emits.body.data.length + errors.body.data.length === depths.length ? { emits: emits.body.data.length, errors: errors.body.data.map((e: { event: unknown }) => JSON.stringify(e.event).slice(0, 200)) } : undefined;
    }, { what: 'the runs', timeoutMs: 60_000 });
    // The runner refuses what it cannot serialize (past about 2,000 levels) as an $errors event; the rest are events.
    expect(settled.emits).toBeGreaterThanOrEqual(4);
    await signInA(`/sources/${id}`);
    await page.locator('#panel-events').getByText('Live').waitFor();
    await eventually(async () => (await page.locator('#panel-events .event-list > li').count()) === settled.emits, { what: 'the events shown' });
    await openAll();
    // Expanded, each is its JSON as text (2,000 levels indented: cut at 64 KB).
    await page.locator('#panel-events pre').nth(settled.emits - 1).waitFor();
    for (const text of await page.locator('#panel-events pre').allTextContents()) expect(text.length).toBeLessThanOrEqual(64 * 1024);
    await page.getByRole('tab', { name: /Logs and errors/ }).click();
    await openAll();
    expect(await page.evaluate('document.title')).toBe('Event sources');
    expect(pageErrors).toEqual([]);
    await ranNothing();
  }, 240_000);

  it("renders the steps of B's huge workflow runs only for the run A opens", async () => {
    const step = (n: number) => ({ name: `s${n}`, code: `export default defineComponent({ async run({ $ }) { $.export("e", "e${n}:" + "e".repeat(100 * 1024)); return "r${n}:" + "r".repeat(100 * 1024); } });` });
    const res = await asB().post(withOrg('/workflows'), { name: 'huge runs', trigger: { manual: {} }, steps: [0, 1, 2, 3, 4].map(step) });
    expect([res.status, res.text.slice(0, 300)]).toEqual([200, expect.any(String)]);
    const wf = res.body.data;
    for (let i = 0; i < 3; i++) {
      expect((await asB().post(withOrg(`/workflows/${wf.id}/run`), {})).status).toBe(202);
      await eventually(async () => (await asB().get(withOrg(`/workflows/${wf.id}/runs`))).body.data.length > i, { what: `run ${i + 1}`, timeoutMs: 30_000 });
    }
    await signInA(`/workflows/${wf.id}`);
    const runs = page.locator('#panel-runs .runs > li');
    await eventually(async () => (await runs.count()) === 3, { what: 'the 3 runs' });
    // The newest run is open: its 5 steps, each with 100 KB of return value and exports, shown as text.
    await runs.first().locator('.run-steps > li').nth(4).getByText(/^"r4:r{100}/).waitFor();
    // 3 MB of run records reached the page; the closed runs' steps are not in it.
    expect(await page.evaluate('document.querySelector("#panel-runs").textContent.length')).toBeLessThan(1.2 * 1024 * 1024);
    expect(await runs.nth(1).locator('.run-steps').count()).toBe(0);
    // Opened, a run shows its steps; closed again, they leave the page.
    await runs.nth(2).locator('summary').click();
    await runs.nth(2).locator('.run-steps > li').nth(4).getByText(/^"r4:r{100}/).waitFor();
    await runs.nth(2).locator('summary').click();
    await eventually(async () => (await runs.nth(2).locator('.run-steps').count()) === 0, { what: 'the steps to go' });
    await ranNothing();
  }, 240_000);

  it('shows the org name in the workspace switcher and on the Account page as text', async () => {
    await signInA('/account');
    await page.getByRole('heading', { name: 'Organizations' }).waitFor();
    await page.locator('.org-switch option').nth(1).waitFor({ state: 'attached' });
    expect(await page.locator('.org-switch option').allTextContents()).toContain(hostile('org').slice(0, 200));
    await ranNothing();
  });
});
