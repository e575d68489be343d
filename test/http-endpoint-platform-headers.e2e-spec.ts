import { connect, type Socket } from 'node:net';
import { createUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { deployHttpSource, postUntilOk } from './support/http-sources';
import { rawRequest } from './support/raw-http';
import { eventually, startSystem, System } from './support/system';

/** Answers with respond() as the request's path asks: its own headers, a Cache-Control of its own, a 1xx, none at all, none in time. */
const RESPONDING_SOURCE = `module.exports = {
  name: "Responding", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    if (event.path === "/none") return;
    if (event.path === "/slow") return new Promise((resolve) => setTimeout(resolve, 12000));
    if (event.path === "/informational") return this.http.respond({ status: 103, body: "" });
    const headers = event.path === "/cached" ? { "cache-control": "public, max-age=60" } : { "x-mine": "yes" };
    this.http.respond({ status: 201, headers, body: "ok" });
  },
};`;

const API_HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };

/** Status, `code` and the two headers of a fetch answer. */
async function seen(res: Response): Promise<{ status: number; code?: string; headers: Record<string, string | null> }> {
  const body = (await res.json()) as { code?: string };
  return { status: res.status, code: body.code, headers: { 'cache-control': res.headers.get('cache-control'), 'x-content-type-options': res.headers.get('x-content-type-options') } };
}

/** The same of an answer read off the socket. */
function seenRaw(res: { status: number; headers: string; body: string }): { status: number; code?: string; headers: Record<string, string | null> } {
  const header = (name: string): string | null => new RegExp(`^${name}: (.*)$`, 'im').exec(res.headers)?.[1].trim() ?? null;
  return { status: res.status, code: (JSON.parse(res.body) as { code?: string }).code, headers: { 'cache-control': header('cache-control'), 'x-content-type-options': header('x-content-type-options') } };
}

/**
 * The HTTP interface of sources answered its own refusals (404, 413, 429, 503…) without the `Cache-Control: no-store`
 * and `X-Content-Type-Options: nosniff` every API answer carries: only what a component answers with respond() is its own.
 */
describe("HTTP endpoints: the platform's own answers carry the API answer headers, a component's respond() its own", () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem({ HTTP_MAX_BODY_BYTES: '1024', HTTP_BODY_BYTES_IN_FLIGHT: '4096', HTTP_RATE_PER_SEC: '1', HTTP_BURST: '20', HTTP_RESPONSE_TIMEOUT_MS: '8000' });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('sends no-store and nosniff with {success: true} and every refusal at /e/…', async () => {
    const user = createUser(system);
    const { url } = await deployHttpSource(system, user, HTTP_SOURCE);
    const stored = await postUntilOk(url);
    const { host, pathname } = new URL(url);
    const expected = (status: number, code?: string) => ({ status, code, headers: API_HEADERS });
    expect(await seen(stored)).toEqual(expected(200));
    // A GET (Fastify's route) and a POST the fast path serves.
    expect(await seen(await fetch(`${url}/x?a=1`))).toEqual(expected(200));
    expect(await seen(await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' }))).toEqual(expected(200));
    expect(await seen(await fetch(`${system.origin}/e/nosuchendpoint`, { method: 'POST', body: 'x' }))).toEqual(expected(404, 'not_found'));
    expect(await seen(await fetch(url, { method: 'POST', body: 'x'.repeat(2000) }))).toEqual(expected(413, 'payload_too_large'));
    const twice = await rawRequest(system.origin, `POST ${pathname} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: text/plain\r\nContent-Type: application/json\r\nContent-Length: 1\r\n\r\nx`);
    expect(seenRaw(twice)).toEqual(expected(400, 'invalid_request'));
    const limited = await Promise.all(Array.from({ length: 30 }, () => fetch(url, { method: 'POST', body: 'x' })));
    const refused = limited.find((r) => r.status === 429)!;
    expect(await seen(refused)).toEqual(expected(429, 'rate_limited'));

    // A body past HTTP_BODY_BYTES_IN_FLIGHT (a quarter of it, 1 KiB, per address: one held body of 1 KiB takes it).
    const port = Number(new URL(system.origin).port);
    const held: Socket = connect(port, '127.0.0.1');
    held.on('error', () => undefined);
    try {
      held.write(`POST ${pathname} HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 1024\r\n\r\n`);
      const past = await eventually(async () => {
        const r = await rawRequest(system.origin, `POST ${pathname} HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 1\r\n\r\nx`);
        return r.status === 503 ? r : undefined;
      }, { what: 'a 503 past the body budget' });
      expect(seenRaw(past)).toEqual(expected(503, 'unavailable'));
    } finally {
      held.destroy();
    }
  }, 120_000);

  it("relays a component's respond() with the headers it chose, and answers for it with the API answer headers when it cannot", async () => {
    const user = createUser(system);
    const { url } = await deployHttpSource(system, user, RESPONDING_SOURCE);
    const own = await eventually(async () => {
      const r = await fetch(`${url}/own`, { method: 'POST', body: 'x' });
      return r.status === 201 ? r : undefined;
    }, { what: 'the source to respond', timeoutMs: 60_000 });
    expect([own.headers.get('x-mine'), own.headers.get('cache-control'), own.headers.get('x-content-type-options'), await own.text()]).toEqual(['yes', null, null, 'ok']);
    const cached = await fetch(`${url}/cached`, { method: 'POST', body: 'x' });
    expect([cached.status, cached.headers.get('cache-control'), cached.headers.get('x-content-type-options')]).toEqual([201, 'public, max-age=60', null]);

    // What the platform answers in the component's place: a 1xx it cannot relay (the api), a run that ended without respond() (the runner).
    expect(await seen(await fetch(`${url}/informational`, { method: 'POST', body: 'x' }))).toEqual({ status: 502, code: 'bad_gateway', headers: API_HEADERS });
    expect(await seen(await fetch(`${url}/none`, { method: 'POST', body: 'x' }))).toEqual({ status: 502, code: 'source_error', headers: API_HEADERS });
    // A run longer than HTTP_RESPONSE_TIMEOUT_MS: the api stops waiting.
    expect(await seen(await fetch(`${url}/slow`, { method: 'POST', body: 'x' }))).toEqual({ status: 504, code: 'gateway_timeout', headers: API_HEADERS });
  }, 120_000);
});
