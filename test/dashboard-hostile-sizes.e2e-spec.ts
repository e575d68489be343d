import type { Browser, Page } from 'playwright-core';
import { client, createUser, TestUser } from './support/accounts';
import { launchBrowser } from './support/browser';
import { eventually, startSystem, System } from './support/system';

// Per request, an event as large as a tenant may make one: a 256 KB `$emit` summary and 200 KB of data.
const HUGE_SOURCE = `module.exports = {
  name: "Huge", version: "1",
  props: { http: "$.interface.http" },
  async run(event) {
    this.$emit({ n: event.body.n, blob: "d".repeat(200 * 1024) }, { summary: "S".repeat(256 * 1024) + " end" + event.body.n });
  },
};`;

/**
 * A source page following events of the largest size a tenant can emit, live (the stream carries them
 * whole): each shows a summary line cut short and its JSON only when expanded, capped, so a page of
 * such events stays a page of a few KB of text rather than a hundred MB.
 */
describe('dashboard: huge events stay a usable page', () => {
  let system: System;
  let user: TestUser;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    system = await startSystem();
    user = createUser(system);
    browser = await launchBrowser();
    page = await browser.newPage();
    page.setDefaultTimeout(30_000);
    page.on('pageerror', (e) => process.stderr.write(`page error: ${e.message}\n`));
  });
  afterAll(async () => {
    await browser?.close();
    await system?.stop();
  });

  it('cuts summaries and event JSON of huge live events', async () => {
    const api = client(system, user.apiKey);
    const created = await api.post('/sources', { component_code: HUGE_SOURCE, name: 'huge' });
    expect(created.status).toBe(200);
    const source = created.body.data;
    const url = source.configured_props.http.endpoint_url as string;
    const send = (n: number) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
    await eventually(async () => (await send(0)).status === 200, { what: 'the source to take a request' });
    await eventually(async () => (await api.get(`/sources/${source.id}/event_summaries`)).body.data.length > 0, { what: 'the event to be indexed', timeoutMs: 30_000 });

    await page.goto(`${system.origin}/ui/`);
    await page.evaluate(`sessionStorage.setItem('ess.apiKey', ${JSON.stringify(user.apiKey)})`);
    await page.goto(`${system.origin}/ui/sources/${source.id}`);
    await page.locator('#panel-events').getByText('Live').waitFor();
    for (let n = 1; n <= 4; n++) expect((await send(n)).status).toBe(200);
    const items = page.locator('#panel-events .event-list > li');
    await eventually(async () => (await items.count()) === 5, { what: 'the 5 events on the page', timeoutMs: 30_000 });

    // 5 × 456 KB reached the page; it shows a line of each, cut.
    expect(await page.evaluate('document.body.textContent.length')).toBeLessThan(20_000);
    const line = ((await items.first().locator('.json__summary').textContent()) ?? '').trim();
    expect(line.startsWith('SSSS')).toBe(true);
    expect(line.endsWith('…')).toBe(true);
    expect(line.length).toBeLessThanOrEqual(300);

    // Expanded, the newest event's JSON (the whole 200 KB arrived live) is shown up to 64 KB, with what was left out.
    await items.first().locator('summary').click();
    const pre = (await items.first().locator('pre').textContent()) ?? '';
    expect(pre.startsWith('{\n  "n": 4,')).toBe(true);
    expect(pre.length).toBe(64 * 1024);
    await items.first().getByText(/more characters, not shown/).waitFor();
    // Closed again, the JSON leaves the page.
    await items.first().locator('summary').click();
    await eventually(async () => (await items.first().locator('pre').count()) === 0, { what: 'the JSON to go' });
  });
});
