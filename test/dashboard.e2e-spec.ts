import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { client, createUser, TestUser } from './support/accounts';
import { launchBrowser, screenshotDir } from './support/browser';
import { eventually, freePort, startSystem, System } from './support/system';
import { Receiver, subscriptionsLoaded } from './events.helpers';

// The component a user pastes: an HTTP source with props of several kinds, which throws on request.
const CODE = `module.exports = {
  name: "Greeter",
  version: "0.1.0",
  props: {
    http: "$.interface.http",
    greeting: { type: "string", label: "Greeting", description: "Put in front of every event" },
    token: { type: "string", label: "Token", secret: true },
    repeat: { type: "integer", label: "Repeat", min: 1, max: 5, default: 1, optional: true },
    color: {
      type: "string",
      label: "Color",
      async options({ page }) {
        return [["red", { label: "Green", value: "green" }], ["blue"]][page] || [];
      },
    },
  },
  async run(event) {
    const body = (event && event.body) || {};
    if (body.fail) throw new Error("boom: " + body.fail);
    this.$emit({ greeting: this.greeting, repeat: this.repeat, color: this.color, token_length: this.token.length, body }, { summary: this.greeting + " " + (body.who || "manual run") });
  },
};
`;

// A workflow's code steps: `check` fails when the request has more items than LIMIT (the fix raises it).
const PREPARE = `export default defineComponent({
  async run({ steps, $ }) {
    const items = ((steps.trigger.event && steps.trigger.event.body) || {}).items || [];
    $.export("items", items.length);
    return { n: items.length };
  },
})`;
const CHECK = (limit: number) => `export default defineComponent({
  async run({ steps }) {
    const n = steps.prepare.$return_value.n;
    if (n > ${limit}) throw new Error("too many items: " + n);
    return { accepted: n };
  },
})`;
const FINISH = `export default defineComponent({
  async run({ steps, $ }) {
    $.send.emit({ accepted: steps.check.$return_value.accepted });
  },
})`;
const workflow = (limit: number) => ({
  name: 'order-check',
  trigger: { http: {} },
  steps: [
    { name: 'prepare', code: PREPARE },
    { name: 'check', code: CHECK(limit) },
    { name: 'finish', code: FINISH },
  ],
});

/**
 * The dashboard in a real Chromium against the real apps: a user signs in with their key, deploys a
 * source from code with props, sends requests to its endpoint and sees the events arrive without a
 * reload, sees a $errors entry, creates a webhook and sees its delivery attempts, and signs out.
 */
describe('dashboard: user journeys in a real browser', () => {
  let system: System;
  let user: TestUser;
  let browser: Browser;
  let page: Page;
  let receiver: Receiver;
  let sourceId = '';
  let endpoint = '';
  const shots = screenshotDir();
  const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    system = await startSystem({ DELIVERY_METRICS_PORT: String(await freePort()), WEBHOOK_RETRY_SCHEDULE: '200ms' });
    user = createUser(system);
    receiver = await new Receiver().start();
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1280, height: 860 }, colorScheme: 'light' });
    page.setDefaultTimeout(20_000);
    // What the page reports goes into the test's output: a failing step then says why.
    page.on('pageerror', (e) => process.stderr.write(`page error: ${e.message}\n`));
    page.on('console', (m) => m.type() === 'error' && !/Failed to load resource/.test(m.text()) && process.stderr.write(`page console: ${m.text()}\n`));
    page.on('response', async (r) => r.status() >= 400 && process.stderr.write(`page request: ${r.request().method()} ${r.url()} → ${r.status()} ${await r.text().catch(() => '')}\n`));
  });
  afterAll(async () => {
    await browser?.close();
    await receiver?.stop();
    await system?.stop();
  });

  const ui = (path = '/') => `${system.origin}/ui${path}`;
  const request = (body: unknown) => fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('is served by the api under /ui/ without touching the API or its error contract', async () => {
    const index = await fetch(ui('/'));
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toMatch(/^text\/html/);
    expect(index.headers.get('content-security-policy')).toContain("connect-src 'self'");
    // Client-side routes answer the same page; a missing asset is a 404 in the API's error shape.
    expect(await (await fetch(ui('/sources/dc_x'))).text()).toBe(await index.text());
    const missing = await fetch(ui('/assets/nothing.js'));
    expect(missing.status).toBe(404);
    expect((await missing.json()) as unknown).toEqual({ error: expect.stringContaining('no such file'), code: 'not_found' });
    expect((await fetch(ui('/../v1/users/me'))).status).not.toBe(200);
    const root = await fetch(`${system.origin}/`, { redirect: 'manual' });
    expect([root.status, root.headers.get('location')]).toEqual([302, '/ui/']);
    const api = await fetch(`${system.baseUrl}/nothing-here`);
    expect([api.status, ((await api.json()) as { code: string }).code]).toEqual([404, 'not_found']);
    const openapi = (await (await fetch(`${system.baseUrl}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(openapi.paths).filter((p) => p === '/' || p.startsWith('/ui'))).toEqual([]);
  });

  it('signs in with an API key (a wrong key is refused)', async () => {
    await page.goto(system.origin);
    await page.getByLabel('API key').fill('not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'That API key is not valid.' }).waitFor();
    await shot('sign-in');
    // By keyboard: the key field comes first, Enter submits.
    await page.getByLabel('API key').fill('');
    await page.getByRole('heading', { name: 'Sign in' }).click();
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.id')).toBe('api-key');
    await page.keyboard.type(user.apiKey);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Sources', exact: true }).waitFor();
    await page.getByText('No sources yet.').waitFor();
    expect(await page.evaluate('sessionStorage.getItem("ess.apiKey")')).toBe(user.apiKey);
  });

  it('deploys a source from code with props, showing the API’s error at the field it names', async () => {
    await page.getByRole('link', { name: 'New source' }).first().click();
    await page.getByLabel('Component code').fill(CODE);
    await page.getByRole('button', { name: 'Read props' }).click();
    await page.getByLabel(/^Greeting/).fill('hello');
    const token = page.getByLabel(/^Token/);
    expect(await token.getAttribute('type')).toBe('password');
    await token.fill('s3cret-token');
    expect(await page.getByLabel(/^Repeat/).inputValue()).toBe('1');
    await page.getByLabel(/^Repeat/).fill('9');
    // Async options(), a page at a time, through the API's options endpoint.
    await page.getByRole('button', { name: 'Load options' }).click();
    const picker = page.getByLabel('Options from the component');
    await picker.locator('option', { hasText: 'Green' }).waitFor({ state: 'attached' });
    await page.getByRole('button', { name: 'Load more options' }).click();
    await picker.locator('option', { hasText: 'blue' }).waitFor({ state: 'attached' });
    await page.getByRole('button', { name: 'Load more options' }).click();
    await page.getByRole('button', { name: 'Load more options' }).waitFor({ state: 'detached' });
    expect(await picker.locator('option').allTextContents()).toEqual(['— pick one —', 'red', 'Green', 'blue']);
    await picker.selectOption({ label: 'blue' });
    expect(await page.getByLabel(/^Color/).inputValue()).toBe('blue');
    await page.getByLabel('Name', { exact: true }).fill('My greeter');
    await shot('new-source');
    await page.getByRole('button', { name: 'Deploy' }).click();
    // The API refuses 9 (max 5) and names the prop: the message is shown under that field.
    const fieldError = page.locator('#prop-repeat-error');
    await fieldError.waitFor();
    expect(await fieldError.textContent()).toMatch(/5/);
    expect(await page.getByLabel(/^Repeat/).getAttribute('aria-invalid')).toBe('true');
    await page.getByLabel(/^Repeat/).fill('2');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.getByRole('heading', { name: 'My greeter', exact: true }).waitFor();
    sourceId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop() ?? '');
    expect(sourceId).toMatch(/^dc_/);
    endpoint = (await page.locator('#endpoint-url').textContent()) ?? '';
    expect(endpoint).toMatch(new RegExp(`^${system.origin}/e/`));
    const stored = (await client(system, user.apiKey).get(`/sources/${sourceId}`)).body.data;
    expect(stored.configured_props).toEqual({ http: { endpoint_url: endpoint }, greeting: 'hello', token: '********', repeat: 2, color: 'blue' });
  });

  it('shows events live, without a reload, as requests reach the endpoint', async () => {
    // The page's own window keeps this mark until the document is replaced (a reload or a navigation).
    await page.evaluate('window.sameDocument = true');
    await page.locator('#panel-events').getByText('Live').waitFor();
    await eventually(async () => (await request({ who: 'Ada' })).status === 200, { what: 'the endpoint to answer' });
    await page.locator('#panel-events').getByText('hello Ada').first().waitFor();
    await page.locator('#panel-events').getByText('hello Ada').first().click();
    await page.locator('#panel-events pre').filter({ hasText: '"who": "Ada"' }).first().waitFor();
    await request({ who: 'Grace' });
    const items = page.locator('#panel-events .event-list > li');
    await page.locator('#panel-events').getByText('hello Grace').waitFor();
    expect(await items.first().textContent()).toContain('hello Grace'); // newest first
    expect(await page.evaluate('window.sameDocument')).toBe(true);
    await shot('source-detail');
  });

  it('runs the source by hand and shows a thrown error in $errors', async () => {
    await page.getByRole('button', { name: 'Run now' }).click();
    await page.getByText(/Run requested/).waitFor();
    await page.locator('#panel-events').getByText('hello manual run').waitFor();
    await request({ fail: 'no greeting today' });
    await page.getByRole('tab', { name: /Logs and errors/ }).click();
    await page.locator('#panel-logs .json__summary').getByText('Error: boom: no greeting today').waitFor();
    await page.getByRole('tab', { name: /1 \$errors/ }).waitFor();
    await shot('source-errors');
  });

  it('lists the source with its endpoint, last event and error count, and finds it by search', async () => {
    // The list reads the indexed events (the live page above reads the stream): wait until the error is indexed.
    const api = client(system, user.apiKey);
    await eventually(async () => (await api.get(`/sources/${sourceId}/event_summaries?event_name=%24errors`)).body.page_info.total_count === 1, { what: 'the $errors event to be indexed' });
    await page.getByRole('link', { name: 'Sources', exact: true }).click();
    const row = page.getByRole('row', { name: /My greeter/ });
    await row.waitFor();
    await row.getByText(endpoint).waitFor();
    await row.locator('.badge--err', { hasText: '1' }).waitFor();
    await row.getByText(/ago|just now/).waitFor();
    await page.getByLabel('Search sources').fill('nothing like it');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No source matches “nothing like it”.').waitFor();
    await page.getByLabel('Search sources').fill('greeter');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('row', { name: /My greeter/ }).waitFor();
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.getByRole('row', { name: /My greeter/ }).getByText(/ago|just now/).waitFor();
    await shot('sources');
  });

  it('fits a phone’s width and follows a dark colour scheme', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.emulateMedia({ colorScheme: 'dark' });
    try {
      await page.getByRole('row', { name: /My greeter/ }).waitFor();
      // Nothing wider than the screen: no sideways scrolling of the page.
      expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
      const background = (await page.evaluate('getComputedStyle(document.body).backgroundColor')) as string;
      const [r, g, b] = (background.match(/\d+/g) ?? []).map(Number);
      expect(r + g + b).toBeLessThan(120);
      await shot('sources-phone-dark');
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
      await page.emulateMedia({ colorScheme: 'light' });
    }
  });

  it('creates a webhook, subscribes the source and shows its delivery attempts', async () => {
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('URL').fill(receiver.url);
    await page.getByLabel('Name').fill('Local receiver');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByText(/whsec_/).waitFor();
    const card = page.getByRole('article', { name: 'Webhook Local receiver' });
    await card.getByLabel('Source').selectOption({ label: 'My greeter' });
    await card.getByRole('button', { name: 'Subscribe' }).click();
    await card.getByText('default channel').first().waitFor();
    await subscriptionsLoaded(system);
    await request({ who: 'Linus' });
    await eventually(async () => receiver.received.length > 0, { what: 'the webhook to receive the event' });
    await card.getByText('Delivery attempts').click();
    const attempt = card.getByRole('row', { name: /succeeded/ });
    await attempt.waitFor();
    expect(await attempt.textContent()).toContain('200');
    expect(await attempt.textContent()).toMatch(/\d+ ms/);
    await shot('webhooks');
  });

  it('deploys the example the page starts with, and runs it', async () => {
    await page.goto(ui('/sources/new'));
    await page.getByRole('button', { name: 'Read props' }).click();
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.waitForURL(/\/ui\/sources\/dc_[^/]+$/);
    const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop() ?? '');
    await page.locator('#panel-events').getByText('Live').waitFor();
    await page.getByRole('button', { name: 'Run now' }).click();
    await page.locator('#panel-events').getByText('manual run').waitFor();
    const url = (await page.locator('#endpoint-url').textContent()) ?? '';
    await eventually(async () => (await fetch(`${url}/hello`, { method: 'POST', body: 'hi' })).status === 200, { what: 'the endpoint to answer' });
    await page.locator('#panel-events').getByText('POST /hello').first().waitFor();
    expect((await client(system, user.apiKey).del(`/sources/${id}`)).status).toBe(204);
  });

  it('loads a registry component and generates its timer field', async () => {
    const api = client(system, user.apiKey);
    await eventually(async () => (await api.get('/components/registry/schedule-interval')).status === 200, { what: 'the registry to be published', timeoutMs: 60_000 });
    await page.goto(ui('/sources/new'));
    await page.getByLabel('Registry component key').fill('schedule-interval');
    await page.getByRole('button', { name: 'Use registry component' }).click();
    await page.getByLabel('Interval in seconds').waitFor();
    expect(await page.getByLabel('Interval in seconds').inputValue()).toBe('60');
    expect(await page.getByLabel('Component code').inputValue()).toContain('intervalSeconds');
    await page.getByLabel('Interval in seconds').fill('3600');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.waitForURL(/\/ui\/sources\/dc_[^/]+$/);
    await page.locator('#source-title').waitFor();
    const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop() ?? '');
    expect((await api.get(`/sources/${id}`)).body.data.configured_props.timer).toEqual({ cron: null, interval_seconds: 3600 });
    expect((await api.del(`/sources/${id}`)).status).toBe(204);
  });

  it('edits the props of the source, keeping its secret', async () => {
    await page.goto(ui(`/sources/${sourceId}`));
    await page.getByRole('link', { name: 'Edit code and props' }).click();
    await page.getByRole('heading', { name: 'Edit My greeter' }).waitFor();
    expect(await page.getByLabel('Component code').inputValue()).toBe(CODE);
    expect(await page.getByLabel(/^Token/).inputValue()).toBe('********');
    expect(await page.getByLabel(/^Color/).inputValue()).toBe('blue');
    await page.getByLabel(/^Greeting/).fill('hey');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('heading', { name: 'My greeter', exact: true }).waitFor();
    const stored = (await client(system, user.apiKey).get(`/sources/${sourceId}`)).body.data;
    expect(stored.configured_props).toMatchObject({ greeting: 'hey', token: '********', repeat: 2, color: 'blue' });
    // The secret kept its value (the source sees the 12 characters of s3cret-token), the greeting is new.
    await page.locator('#panel-events').getByText('Live').waitFor();
    await eventually(async () => (await request({ who: 'Barbara' })).status === 200, { what: 'the endpoint to answer' });
    await page.locator('#panel-events').getByText('hey Barbara').first().click();
    await page.locator('#panel-events pre').filter({ hasText: '"token_length": 12' }).filter({ hasText: 'Barbara' }).first().waitFor();
  });

  it('deactivates and activates, deletes events and shows the account', async () => {
    await page.goto(ui(`/sources/${sourceId}`));
    await page.getByRole('button', { name: 'Deactivate' }).click();
    await page.getByText('inactive', { exact: true }).waitFor();
    expect((await client(system, user.apiKey).get(`/sources/${sourceId}`)).body.data.active).toBe(false);
    await page.getByRole('button', { name: 'Activate' }).click();
    await page.getByText('active', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Delete events' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete events' }).click();
    await page.getByText('Events deleted.').waitFor();
    await eventually(async () => (await client(system, user.apiKey).get(`/sources/${sourceId}/event_summaries`)).body.page_info.total_count === 0, { what: 'events to be deleted' });
    await page.reload();
    await page.locator('#panel-events').getByText('No events yet').waitFor();

    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByRole('heading', { name: 'Usage', exact: true }).waitFor();
    await page.getByRole('meter', { name: 'Invocations' }).waitFor();
    await page.getByText(user.apiKey.slice(-4)).waitFor();
    expect(await page.content()).not.toContain(user.apiKey);
  });

  it('charts the invocations and compute time of each day against the quota', async () => {
    // The source ran above (requests to its endpoint, a manual run): wait until the delivery app has counted them.
    const api = client(system, user.apiKey);
    const counted = await eventually(async () => {
      const u = (await api.get('/users/me/usage?days=30')).body.data;
      const today = u.days[u.days.length - 1];
      return today.invocations >= 3 && today.compute_time_ms > 0 ? u : undefined;
    }, { what: "today's invocations counted" });
    const today: string = counted.to;
    const me = (await api.get('/users/me')).body.data;

    await page.goto(ui('/account'));
    await page.getByRole('heading', { name: 'Usage per day' }).waitFor();
    const chart = page.getByRole('img', { name: /^Invocations per day/ });
    await chart.waitFor();
    // Described for screen readers: the window, the total and today's figure, the quota.
    const desc = (await chart.locator('desc').textContent()) ?? '';
    expect(desc).toContain(`from ${counted.from} to ${today}`);
    expect(desc).toContain(`Daily quota ${me.daily_invocations_quota.toLocaleString('en-US')}`);
    const shown = Number(/today ([\d,]+)\./.exec(desc)?.[1].replace(/,/g, ''));
    expect(shown).toBeGreaterThanOrEqual(counted.days[counted.days.length - 1].invocations);
    // Thirty bars, today's drawn (not empty), the others of this new account at zero; the quota line.
    expect(await chart.locator('rect.chart__bar').count()).toBe(30);
    expect(Number(await chart.locator(`rect[data-day="${today}"]`).getAttribute('height'))).toBeGreaterThan(0);
    expect(Number(await chart.locator(`rect[data-day="${counted.from}"]`).getAttribute('height'))).toBe(0);
    expect(await chart.locator('line.chart__quota').getAttribute('data-quota')).toBe(String(me.daily_invocations_quota));
    const compute = page.getByRole('img', { name: /^Compute time per day/ });
    expect(Number(await compute.locator(`rect[data-day="${today}"]`).getAttribute('height'))).toBeGreaterThan(0);
    expect(await compute.locator('line.chart__quota').getAttribute('data-quota')).toBe(String(me.daily_compute_time_quota));

    // The same figures as a table: today's row first.
    await page.getByText('Usage per day as a table').click();
    const row = page.getByRole('row', { name: new RegExp(`^${today}`) });
    await row.waitFor();
    expect(Number(((await row.getByRole('cell').first().textContent()) ?? '').replace(/,/g, ''))).toBe(shown);
    expect(await page.locator('.chart-table tbody tr').count()).toBe(30);
    await shot('account');

    // Another period: seven days.
    await page.getByLabel('Period').selectOption('7');
    await eventually(async () => (await page.locator('.chart-table tbody tr').count()) === 7, { what: 'seven days' });
    expect(await chart.locator('rect.chart__bar').count()).toBe(7);

    // A phone's width in the dark scheme: no sideways scrolling.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.emulateMedia({ colorScheme: 'dark' });
    try {
      await chart.waitFor();
      // Nothing reaches past the screen's right edge (the elements that do are named on failure).
      const wider = await page.evaluate(`[...document.querySelectorAll('main *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5 && !e.closest('.table-wrap')).map((e) => e.tagName.toLowerCase() + '.' + [...e.classList].join('.'))`);
      expect(wider).toEqual([]);
      expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
      await shot('account-phone-dark');
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
      await page.emulateMedia({ colorScheme: 'light' });
    }
  });

  it('lists a workflow, shows a run step by step and its $errors live, and replays it after a fix', async () => {
    const api = client(system, user.apiKey);
    const created = await api.post('/workflows', workflow(2));
    expect(created.status).toBe(200);
    const wf = created.body.data as { id: string; deployment_id: string; trigger: { endpoint_url: string } };
    const url = wf.trigger.endpoint_url;
    await page.goto(ui('/'));
    await page.getByRole('link', { name: 'Workflows' }).click();
    const row = page.getByRole('row', { name: /order-check/ });
    await row.getByText(url).waitFor();
    expect(await row.locator('[data-label="Trigger"]').textContent()).toBe('HTTPcallers get {"success":true}');
    await row.locator('[data-label="Last run"]').getByText('none').waitFor();
    await row.getByRole('link', { name: 'order-check' }).click();
    await page.getByRole('heading', { name: 'order-check' }).waitFor();
    expect(await page.locator('#trigger-url').textContent()).toBe(url);
    await page.evaluate('window.sameDocument = true');
    await page.locator('#panel-runs').getByText('Live').waitFor();

    // A request with 3 items: step check fails (its limit is 2), finish does not run.
    await eventually(async () => (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ items: ['a', 'b', 'c'] }) })).status === 200, { what: 'the trigger URL to answer' });
    const runs = page.locator('#panel-runs .runs > li');
    const failed = runs.first();
    await failed.getByText('failed at step').waitFor();
    const steps = failed.locator('.run-steps > li');
    expect(await steps.count()).toBe(3);
    expect(await steps.nth(0).textContent()).toMatch(/^prepare succeeded \d+ ms/);
    await steps.nth(0).locator('pre').filter({ hasText: '"items": 3' }).waitFor();
    expect(await steps.nth(1).textContent()).toContain('check failed');
    await steps.nth(1).getByText('Error: too many items: 3').waitFor();
    expect(await steps.nth(2).textContent()).toBe('finish not run');
    await shot('workflow-run');

    // Its $errors entry, live too.
    await page.getByRole('tab', { name: /Logs and errors/ }).click();
    const error = page.locator('#panel-logs .event--error').first();
    await error.getByText('check: Error: too many items: 3').waitFor();
    await page.getByRole('tab', { name: /1 \$errors/ }).waitFor();
    expect(await page.evaluate('window.sameDocument')).toBe(true);

    // Fixed through the API (a new deployment), then replayed from the $errors entry until the runner runs the new deployment.
    const fixed = await api.put(`/workflows/${wf.id}`, workflow(10));
    expect(fixed.status).toBe(200);
    const deployment = fixed.body.data.deployment_id as string;
    expect(deployment).not.toBe(wf.deployment_id);
    await eventually(
      async () => {
        const before = await runs.count();
        await page.locator('#panel-logs .event--error').first().getByRole('button', { name: /^Replay/ }).click();
        await eventually(async () => (await runs.count()) > before, { what: 'the replayed run' });
        return (await runs.first().locator('summary .badge').textContent()) === 'succeeded';
      },
      { what: 'the replayed run to succeed', timeoutMs: 40_000, intervalMs: 500 },
    );
    await page.getByText(/Replay requested \(inv_/).waitFor();
    await page.getByRole('tab', { name: /^Runs/ }).click();
    const replayed = runs.first();
    await replayed.getByText('current deployment').waitFor();
    expect(await replayed.locator('.run-steps > li').allTextContents()).toEqual([
      expect.stringMatching(/^prepare succeeded/),
      expect.stringMatching(/^check succeeded/),
      expect.stringMatching(/^finish succeeded/),
    ]);
    await replayed.locator('.run-steps > li').nth(1).locator('pre').filter({ hasText: '"accepted": 3' }).waitFor();
    await page.getByText(`deployment ${deployment}`).first().waitFor(); // the page read the new deployment
    await page.getByRole('tab', { name: /Emitted events/ }).click();
    await page.locator('#panel-events').getByText('{"raw_event":{"accepted":3}}').waitFor();
    const [run] = (await api.get(`/workflows/${wf.id}/runs?limit=1`)).body.data as { status: string; deployment_id: string }[];
    expect(run).toEqual(expect.objectContaining({ status: 'success', deployment_id: deployment }));

    // Run now: the manual event has no items.
    await page.getByRole('button', { name: 'Run now' }).click();
    await page.getByText(/Run requested \(inv_/).waitFor();
    await page.locator('#panel-events').getByText('{"raw_event":{"accepted":0}}').waitFor();
    await page.getByRole('tab', { name: /^Runs/ }).focus();
    await page.keyboard.press('ArrowLeft');
    expect(await page.evaluate('document.activeElement.id')).toBe('tab-logs');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    expect(await page.evaluate('document.activeElement.id')).toBe('tab-events');
    await page.getByRole('tab', { name: /^Runs/ }).click();
    await shot('workflow-detail');

    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await runs.first().getByText('succeeded').first().waitFor();
      expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
    }
    await page.getByRole('link', { name: 'Workflows' }).click();
    await page.getByRole('row', { name: /order-check/ }).getByText('succeeded').waitFor();
    await shot('workflows');
    expect((await api.del(`/workflows/${wf.id}`)).status).toBe(204);
  });

  it('deletes the source after confirmation and signs out, forgetting the key', async () => {
    await page.goto(ui(`/sources/${sourceId}`));
    await page.getByRole('button', { name: 'Delete source' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect((await client(system, user.apiKey).get(`/sources/${sourceId}`)).status).toBe(200);
    await page.getByRole('button', { name: 'Delete source' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete source' }).click();
    await page.getByText('No sources yet.').waitFor();
    expect((await client(system, user.apiKey).get(`/sources/${sourceId}`)).status).toBe(404);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate('sessionStorage.getItem("ess.apiKey")')).toBeNull();
    await page.reload();
    await page.getByLabel('API key').waitFor();
  });
});
