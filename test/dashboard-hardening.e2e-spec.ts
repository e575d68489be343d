import { get, IncomingMessage } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { client, createUser, TestUser } from './support/accounts';
import { launchBrowser } from './support/browser';
import { rawRequest } from './support/raw-http';
import { eventually, startSystem, System } from './support/system';

/**
 * The dashboard against hostile content and hostile URLs: a source name, an event payload, a summary,
 * a workflow name and a step error written as HTML must show as text in a real browser and run
 * nothing; static file serving must not leave its folder; the page and the API carry the headers
 * that keep keys and data out of caches and frames.
 */
const XSS = (tag: string) => `<img src=x onerror="window.__xss=(window.__xss||[]).concat('${tag}')"><script>window.__xss=['${tag}-script']</script>`;

const HOSTILE_SOURCE = `module.exports = {
  name: "Echo", version: "1",
  props: { http: "$.interface.http" },
  async run(event) { this.$emit(event.body, { summary: event.body.summary }); },
};`;

const HOSTILE_STEP = `export default defineComponent({
  async run({ steps, $ }) {
    console.log(${JSON.stringify(XSS('log'))});
    $.send.emit({ raw_event: { html: ${JSON.stringify(XSS('emit'))} } });
    if (steps.trigger.event.fail) throw new Error(${JSON.stringify(XSS('error'))});
  },
});`;

// A tenant's HTTP endpoint that answers a page trying to act on the dashboard's origin (same host, `/e/…`).
const HOSTILE_PAGE = `export default defineComponent({
  async run({ $ }) {
    const script = "document.title = 'origin=' + window.origin; try { document.title += ' key=' + sessionStorage.getItem('ess.apiKey'); } catch (e) { document.title += ' storage=denied'; }"
      + "; new Promise((ok) => ok(navigator.serviceWorker.register('/e/sw.js', { scope: '/' }))).then(() => document.title += ' sw=registered', () => document.title += ' sw=denied')"
      + "; fetch('/v1/users/me').then((r) => document.title += ' api=' + r.status, () => document.title += ' api=failed')";
    await $.respond({ status: 200, headers: { "Content-Type": "text/html", "Service-Worker-Allowed": "/", "Clear-Site-Data": '"storage"' }, body: "<!doctype html><title>x</title><script>" + script + "</script>" });
  },
});`;

// A tenant's endpoint that sets large cookies for the whole origin (Path=/, a Domain), to make the
// browser's requests to the dashboard and the API too large to be served.
// Two 3 KB cookies an answer (respond() sets at most 8 KiB of headers), request ?i=0, 1, 2 setting bomb0 … bomb5.
const COOKIE_BOMB = `export default defineComponent({
  async run({ steps, $ }) {
    const i = Number(steps.trigger.event.query.i);
    const big = "x".repeat(3000);
    const cookies = [2 * i, 2 * i + 1].map((n) => "bomb" + n + "=" + big + "; Path=/; Domain=127.0.0.1; Max-Age=3600");
    await $.respond({ status: 200, headers: { "Content-Type": "text/plain", "Set-Cookie": cookies }, body: "ok" });
  },
});`;

describe('dashboard hardening: hostile content, static paths, headers', () => {
  let system: System;
  let user: TestUser;
  let browser: Browser;
  let page: Page;
  const violations: string[] = [];

  beforeAll(async () => {
    system = await startSystem();
    user = createUser(system);
    browser = await launchBrowser();
    page = await browser.newPage();
    page.setDefaultTimeout(20_000);
    page.on('console', (m) => /Content Security Policy/i.test(m.text()) && violations.push(m.text()));
  });
  afterAll(async () => {
    await browser?.close();
    await system?.stop();
  });

  const signIn = async (path: string): Promise<void> => {
    await page.goto(`${system.origin}/ui/`);
    await page.evaluate(`sessionStorage.setItem('ess.apiKey', ${JSON.stringify(user.apiKey)})`);
    await page.goto(`${system.origin}/ui${path}`);
  };
  const ranNothing = async (): Promise<void> => {
    expect(await page.evaluate('window.__xss')).toBeUndefined();
    expect(await page.locator('img[src="x"], main script').count()).toBe(0);
  };

  it('shows a hostile source name, event and summary as text', async () => {
    const api = client(system, user.apiKey);
    const created = await api.post('/sources', { component_code: HOSTILE_SOURCE, name: XSS('name') });
    expect(created.status).toBe(200);
    const source = created.body.data;
    await eventually(async () => {
      const r = await fetch(source.configured_props.http.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ html: XSS('event'), summary: XSS('summary') }) });
      return r.status === 200;
    }, { what: 'the source to take a request' });
    await eventually(async () => (await api.get(`/sources/${source.id}/event_summaries`)).body.data.length > 0, { what: 'the event to be indexed' });

    await signIn('/');
    await page.getByText(XSS('name')).first().waitFor();
    await ranNothing();
    await signIn(`/sources/${source.id}`);
    await page.getByText(XSS('summary')).first().waitFor();
    // Expanded, the event's JSON is in the page as text.
    await page.locator('#panel-events details summary').first().click();
    await page.locator('#panel-events pre').getByText(/concat\('event'\)/).first().waitFor();
    await ranNothing();
    expect(violations).toEqual([]);
  });

  it("shows a hostile workflow name, its logs, emits and error as text", async () => {
    const api = client(system, user.apiKey);
    const wf = (await api.post('/workflows', { name: XSS('wf').slice(0, 200), trigger: { manual: {} }, steps: [{ name: 'hostile', code: HOSTILE_STEP }] })).body.data;
    expect(wf.id).toMatch(/^p_/);
    expect((await api.post(`/workflows/${wf.id}/run`, { event: { fail: true } })).status).toBe(202);
    await eventually(async () => (await api.get(`/workflows/${wf.id}/$errors/event_summaries`)).body.data.length > 0, { what: 'the $errors event', timeoutMs: 30_000 });
    await signIn('/workflows');
    await page.getByText(XSS('wf').slice(0, 40)).first().waitFor();
    await ranNothing();
    await signIn(`/workflows/${wf.id}`);
    await page.getByText(/window.__xss/).first().waitFor();
    for (const d of await page.locator('details summary').all()) await d.click().catch(() => undefined);
    await ranNothing();
    expect(violations).toEqual([]);
  });

  it("runs a tenant's endpoint page in an opaque origin: it cannot read the dashboard's key or claim the origin", async () => {
    const api = client(system, user.apiKey);
    const wf = (await api.post('/workflows', { name: 'hostile-page', trigger: { http: { customResponse: true } }, steps: [{ name: 'page', code: HOSTILE_PAGE }] })).body.data;
    const url = wf.trigger.endpoint_url as string;
    expect(new URL(url).origin).toBe(system.origin);
    const res = await eventually(async () => {
      const r = await fetch(url);
      return r.status === 200 ? r : undefined;
    }, { what: 'the endpoint page', timeoutMs: 30_000 });
    expect(res.headers.get('content-type')).toBe('text/html');
    expect(res.headers.get('content-security-policy')).toMatch(/^sandbox allow-scripts /);
    expect([res.headers.get('service-worker-allowed'), res.headers.get('clear-site-data')]).toEqual([null, null]);
    // Signed in to the dashboard in this tab, then sent to the page: the same tab, the same host.
    await signIn('/');
    await page.getByRole('heading', { name: 'Sources', exact: true }).waitFor();
    await page.goto(url);
    await eventually(async () => /sw=.*api=|api=.*sw=/.test(await page.title()), { what: 'the page script to run' });
    const title = await page.title();
    expect(title.startsWith('origin=null storage=denied ')).toBe(true);
    // No service worker for the origin; the API, asked without the viewer's key (the page cannot have it), refuses or is not readable.
    expect(title).toContain(' sw=denied');
    expect(title).toMatch(/ api=(401|failed)/);
    await page.goto(`${system.origin}/ui/`);
    expect(await page.evaluate('sessionStorage.getItem("ess.apiKey")')).toBe(user.apiKey);
    expect(await page.evaluate('navigator.serviceWorker.getRegistrations().then((r) => r.length)')).toBe(0);
  });

  it("keeps a tenant's cookies under its endpoint's path: the dashboard and the API never receive them", async () => {
    const api = client(system, user.apiKey);
    const wf = (await api.post('/workflows', { name: 'cookie-bomb', trigger: { http: { customResponse: true } }, steps: [{ name: 'page', code: COOKIE_BOMB }] })).body.data;
    const url = wf.trigger.endpoint_url as string;
    const path = new URL(url).pathname;
    for (let i = 0; i < 3; i++) {
      const cookies = await eventually(async () => {
        const r = await new Promise<IncomingMessage>((resolve, reject) => get(`${url}?i=${i}`, resolve).on('error', reject));
        r.resume();
        return r.statusCode === 200 ? r.headers['set-cookie'] : undefined;
      }, { what: 'the endpoint', timeoutMs: 30_000 });
      expect(cookies).toEqual([2 * i, 2 * i + 1].map((n) => `bomb${n}=${'x'.repeat(3000)}; Max-Age=3600; Path=${path}`));
    }
    // In a real browser: the cookies are stored, for the endpoint's path only. Their 18 KB would be more than a request
    // to the dashboard or the API may carry (16 KB of headers): sent there, they would lock the user out.
    for (let i = 0; i < 3; i++) await page.goto(`${url}?i=${i}`);
    const context = page.context();
    expect((await context.cookies(url)).map((c) => c.path)).toEqual(Array(6).fill(path));
    expect(await context.cookies([`${system.origin}/ui/`, `${system.origin}/v1/sources`, `${system.origin}/e/other`])).toEqual([]);
    await signIn('/');
    await page.getByRole('heading', { name: 'Sources', exact: true }).waitFor();
    await context.clearCookies();
  });

  it('serves no file outside the dashboard folder, however the path is written', async () => {
    const root = (await import('node:fs')).readFileSync(`${__dirname}/../package.json`, 'utf8');
    expect(root).toContain('"name": "event-source-service"');
    for (const path of [
      '/ui/../package.json',
      '/ui/..%2f..%2fpackage.json',
      '/ui/%2e%2e/%2e%2e/package.json',
      '/ui/assets/..%2f..%2f..%2fpackage.json',
      '/ui/..%5c..%5cpackage.json',
      '/ui/%2e%2e%2f%2e%2e%2fapps/api/src/main.ts',
      '/ui/..%252f..%252fpackage.json',
      '/ui//etc/passwd',
      '/ui/%2fetc%2fpasswd',
    ]) {
      const res = await rawRequest(system.origin, `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect([path, res.status < 500]).toEqual([path, true]);
      expect(res.body).not.toContain('event-source-service');
      expect(res.body).not.toContain('root:');
      expect(res.body).not.toContain('bootstrap');
    }
  });

  it('sends a strict content security policy with the page, and keeps API answers out of caches', async () => {
    const index = await fetch(`${system.origin}/ui/`);
    const csp = index.headers.get('content-security-policy') ?? '';
    for (const directive of ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"]) expect(csp).toContain(directive);
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
    expect(index.headers.get('x-content-type-options')).toBe('nosniff');
    expect(index.headers.get('x-frame-options')).toBe('DENY');
    expect(index.headers.get('referrer-policy')).toBe('no-referrer');
    // The page's HTML is revalidated on each load (a new build shows at once); the API's answers are never stored.
    expect(index.headers.get('cache-control')).toBe('no-cache');
    for (const res of [await fetch(`${system.baseUrl}/users/me`, { headers: { authorization: `Bearer ${user.apiKey}` } }), await fetch(`${system.baseUrl}/users/me`), await fetch(`${system.baseUrl}/nothing`)]) {
      expect([res.url, res.headers.get('cache-control')]).toEqual([res.url, 'no-store']);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
    // The dashboard's own errors are answers like the API's (its 404s and a refused URL went without nosniff).
    for (const path of ['/ui/assets/missing.js', '/ui/missing.png', '/ui/%00']) {
      const res = await rawRequest(system.origin, `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      const header = (name: string): string | undefined => new RegExp(`^${name}: (.*)$`, 'im').exec(res.headers)?.[1];
      expect([path, res.status, header('content-type'), header('cache-control'), header('x-content-type-options')]).toEqual([path, path.endsWith('%00') ? 400 : 404, 'application/json; charset=utf-8', 'no-store', 'nosniff']);
    }
  });
});
