import { connect, Socket } from 'node:net';
import type { Browser } from 'playwright-core';
import { client, createUser } from './support/accounts';
import { launchBrowser } from './support/browser';
import { rawRequest } from './support/raw-http';
import { eventually, startSystem, System } from './support/system';

// A page that sets cookies for the whole origin (`Path=/`) and for the dashboard's path, and echoes the path it got.
const COOKIE_PAGE = `export default { name: "Cookie page", version: "0.0.1", type: "source",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    this.http.respond({ status: 200, headers: { "content-type": "text/plain", "set-cookie": ["whole=1; Path=/; Max-Age=3600", "ui=2; Path=/ui; Domain=127.0.0.1"] }, body: event.path });
  } }`;

/**
 * The router decodes escapes in a path, so `/%65/<key>` and `/e/%65n…` reach the endpoint `/e/<key>`. Checks made on the
 * target as written took them for other routes: a component's `Set-Cookie` kept its `Path=/` (the dashboard and the API
 * then got its cookies, enough of them to lock a user out with 431s), and their bodies were not counted in
 * HTTP_BODY_BYTES_IN_FLIGHT (80 bodies of 512 KB held from one address, where 64 fit the address's share).
 */
describe('endpoint targets written with escapes', () => {
  let system: System;
  let browser: Browser | undefined;
  beforeAll(async () => {
    // 8 MiB of bodies in flight: 2 MiB, four bodies of 512 KB, per client address.
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', HTTP_BODY_BYTES_IN_FLIGHT: String(8 * 1024 * 1024) });
  });
  afterAll(async () => {
    await browser?.close();
    await system?.stop();
  });

  it("keep a component's cookies under its endpoint's path, in a real browser too", async () => {
    const api = client(system, createUser(system).apiKey);
    const source = (await api.post('/sources', { component_code: COOKIE_PAGE, name: 'cookie-page' })).body.data;
    const url = source.configured_props.http.endpoint_url as string;
    const key = new URL(url).pathname.slice('/e/'.length);
    const escaped = [`${system.origin}/%65/${key}`, `${system.origin}/e/%65${key.slice(1)}/a%2Fb`, `${system.origin}/%65/%65${key.slice(1)}?x=%65`];
    const scoped = ['whole=1; Max-Age=3600; Path=/e/' + key, 'ui=2; Path=/e/' + key];
    await eventually(async () => (await fetch(url)).status === 200, { what: 'the endpoint', timeoutMs: 30_000 });
    for (const target of escaped) {
      const res = await fetch(target);
      expect(res.status).toBe(200);
      expect(res.headers.getSetCookie()).toEqual(scoped);
      // The rest of the path reaches the component as it was sent.
      expect(await res.text()).toBe(target.includes('a%2Fb') ? '/a%2Fb' : '/');
    }
    browser = await launchBrowser();
    const page = await browser.newPage();
    for (const target of escaped) expect((await page.goto(target))?.status()).toBe(200);
    const context = page.context();
    expect(await context.cookies([`${system.origin}/`, `${system.origin}/ui/`, `${system.origin}/v1/sources`])).toEqual([]);
    expect((await context.cookies(url)).map((c) => `${c.name} ${c.path}`).sort()).toEqual([`ui /e/${key}`, `whole /e/${key}`]);
  }, 90_000);

  it('count their bodies in HTTP_BODY_BYTES_IN_FLIGHT', async () => {
    const port = Number(new URL(system.origin).port);
    const sockets: Socket[] = [];
    let refused = 0;
    for (let i = 0; i < 12; i++) {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      s.on('data', (d: Buffer) => {
        if (d.toString().startsWith('HTTP/1.1 503 ')) refused++;
      });
      const target = i % 2 ? `/%65/en${String(i).padStart(22, '0')}` : `/e/%65n${String(i).padStart(22, '0')}`;
      s.write(`POST ${target} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${512 * 1024}\r\n\r\nabc`);
      sockets.push(s);
    }
    // The address's share holds four of them; the other eight are refused unread.
    await eventually(async () => refused >= 8, { what: '503 answers past the budget', timeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 500));
    expect(refused).toBe(8);
    sockets.forEach((s) => s.destroy());
    // The API itself is not behind the budget.
    const other = await rawRequest(system.origin, 'GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(other.status).toBe(200);
  }, 60_000);
});
