import type { Browser, Page } from 'playwright-core';
import { admin, client, createUser, TestUser } from './support/accounts';
import { launchBrowser } from './support/browser';
import { eventually, startSystem, System } from './support/system';

/** An HTTP source that emits the request's body. */
const ECHO = `module.exports = {
  name: "Echo", version: "1",
  props: { http: "$.interface.http" },
  async run(event) { this.$emit(event.body, { summary: "echo" }); },
};`;

/** A component whose prop has a label and a description of 100,000 characters. */
const LONG_LABEL = `module.exports = {
  name: "Long label", version: "1",
  props: { s: { type: "string", label: "L".repeat(100000), description: "D".repeat(100000) } },
  async run() {},
};`;

/**
 * The dashboard's session against what happens to the account meanwhile, and what another tenant's text
 * does to its pages: a key rotated while a page is live, a workspace the user was removed from, a source
 * that cannot be read, events over 1 KB after a reload, bidi overrides and very long prop labels.
 */
describe('dashboard: the session and the page against changes and tenant text', () => {
  let system: System;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    system = await startSystem({ SSE_KEEPALIVE_MS: '60000' });
    browser = await launchBrowser();
  });
  beforeEach(async () => {
    page = await browser.newPage();
    page.setDefaultTimeout(20_000);
  });
  afterEach(async () => page?.close());
  afterAll(async () => {
    await browser?.close();
    await system?.stop();
  });

  const signIn = async (user: TestUser, path: string, org?: string): Promise<void> => {
    await page.goto(`${system.origin}/ui/`);
    await page.evaluate(`sessionStorage.setItem('ess.apiKey', ${JSON.stringify(user.apiKey)}); ${org ? `sessionStorage.setItem('ess.orgId', ${JSON.stringify(org)})` : ''}`);
    await page.goto(`${system.origin}/ui${path}`);
  };
  const echoSource = async (user: TestUser, body: unknown): Promise<string> => {
    const api = client(system, user.apiKey);
    const source = (await api.post('/sources', { component_code: ECHO, name: 'echo' })).body.data;
    await eventually(async () => (await fetch(source.configured_props.http.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).status === 200, { what: 'the source to take a request' });
    await eventually(async () => (await api.get(`/sources/${source.id}/event_summaries`)).body.data.length > 0, { what: 'the event to be indexed' });
    return source.id;
  };

  it('shows a retained event over 1 KB whole after a reload, not its truncation marker', async () => {
    const user = createUser(system);
    const id = await echoSource(user, { big: 'B'.repeat(3000), tail: 'the end' });
    await signIn(user, `/sources/${id}`);
    await page.locator('#panel-events details summary').first().click();
    await page.locator('#panel-events pre').getByText(/the end/).first().waitFor();
    expect(await page.locator('#panel-events pre').first().textContent()).not.toContain('$truncated');
  });

  it('signs out when the key is rotated while a source page is live', async () => {
    const user = createUser(system);
    const id = await echoSource(user, { n: 1 });
    await signIn(user, `/sources/${id}`);
    await page.locator('#panel-events').getByText('Live').waitFor();
    admin(system, ['keys', 'rotate', '--user', user.id]);
    // The stream ends at once (keep-alive 60 s here) and its 401 on reconnecting signs out.
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate("sessionStorage.getItem('ess.apiKey')")).toBeNull();
  });

  it('drops a workspace the user was removed from for their own on the next page', async () => {
    const user = createUser(system);
    const org = admin(system, ['orgs', 'create', '--name', 'Gone', '--orgname', `gone-${user.id.slice(2, 14).toLowerCase()}`]);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', user.id]);
    await signIn(user, '/', org.id);
    await page.getByRole('heading', { name: 'Sources', exact: true }).waitFor();
    admin(system, ['orgs', 'remove-member', '--org', org.id, '--user', user.id]);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await eventually(async () => (await page.evaluate("sessionStorage.getItem('ess.orgId')")) === null, { what: 'the stale workspace dropped' });
    await page.getByRole('link', { name: 'Sources' }).first().click();
    await page.getByRole('heading', { name: 'Sources', exact: true }).waitFor();
    expect(await page.getByText(/not found/).count()).toBe(0);
  });

  it('offers and keeps the workspaces of a paid-plan user, whose GET /users/me has no orgs', async () => {
    const user = createUser(system, 'paid');
    const org = admin(system, ['orgs', 'create', '--name', 'Paid org', '--orgname', `paid-${user.id.slice(2, 14).toLowerCase()}`]);
    admin(system, ['orgs', 'add-member', '--org', org.id, '--user', user.id]);
    await signIn(user, '/', org.id);
    await page.getByRole('heading', { name: 'Sources', exact: true }).waitFor();
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
    // The workspace chosen stays chosen (it was dropped on every page as if the user had left the org), and the
    // switcher offers it.
    expect(await page.evaluate("sessionStorage.getItem('ess.orgId')")).toBe(org.id);
    await page.getByRole('combobox', { name: 'Workspace' }).waitFor();
    expect(await page.getByRole('option', { name: 'Paid org' }).count()).toBe(1);
  });

  it("shows the error, not an empty New source form, for the edit page of a source it cannot read", async () => {
    const owner = createUser(system);
    const stranger = createUser(system);
    const id = await echoSource(owner, { n: 1 });
    await signIn(stranger, `/sources/${id}/edit`);
    await page.getByText(/not found/).first().waitFor();
    expect(await page.getByRole('heading', { name: 'New source' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Deploy' }).count()).toBe(0);
  });

  it("keeps another tenant's bidi overrides inside their own element, and very long prop labels inside the form", async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    expect((await api.post('/webhooks', { url: 'https://example.com/h', name: 'recv \u202Eevil' })).status).toBe(200);
    await signIn(user, '/webhooks');
    const name = page.getByText('recv \u202Eevil').first();
    await name.waitFor();
    // (The tests compile without the DOM's types: the browser's getComputedStyle is reached through globalThis.)
    const bidi = await name.evaluate((el) => (globalThis as unknown as { getComputedStyle(e: unknown): { unicodeBidi: string } }).getComputedStyle(el).unicodeBidi);
    expect(bidi).toBe('isolate');

    const component = (await api.post('/components', { component_code: LONG_LABEL })).body.data;
    const source = (await api.post('/sources', { component_id: component.id, configured_props: { s: 'x' } })).body.data;
    await signIn(user, `/sources/${source.id}/edit`);
    const label = page.locator('label[for="prop-s"]');
    await label.waitFor();
    expect(((await label.textContent()) ?? '').length).toBeLessThan(300);
    expect(((await page.locator('#prop-s-help').textContent()) ?? '').length).toBeLessThan(2100);
    const overflow = await page.locator('form').first().evaluate((el) => el.scrollWidth - el.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
  });
});
