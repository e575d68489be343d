import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * A tenant's endpoint answers from the origin the dashboard and every other tenant's endpoint share.
 * Headers that act on the whole origin (host) rather than on the one answer were relayed as the
 * component set them: HSTS for the host and its subdomains, an alternative service for every later
 * request to the host, and Network Error Logging, with which the browser reports every request to the
 * origin — other users' dashboard and endpoint URLs, their addresses and timings — to the tenant's
 * collector. They are dropped now, like Service-Worker-Allowed and Clear-Site-Data; per-answer headers stay.
 */
const ORIGIN_WIDE = {
  'Strict-Transport-Security': 'max-age=31536000; includeSubDomains',
  'Alt-Svc': 'h2="attacker.example:443"; ma=2592000',
  NEL: '{"report_to":"grab","max_age":31536000,"include_subdomains":true,"success_fraction":1.0}',
  'Report-To': '{"group":"grab","max_age":31536000,"endpoints":[{"url":"https://attacker.example/nel"}],"include_subdomains":true}',
  'Accept-CH': 'Sec-CH-UA-Full-Version-List, Sec-CH-UA-Platform-Version',
  'Critical-CH': 'Sec-CH-UA-Full-Version-List',
  'Origin-Agent-Cluster': '?0',
};
const SOURCE = `module.exports = { name: "Headers", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run() { this.http.respond({ status: 200, headers: Object.assign(${JSON.stringify(ORIGIN_WIDE)}, { "X-Own": "kept", "Cache-Control": "max-age=5" }), body: "hi" }); } };`;

describe("headers of a tenant's endpoint that act on the whole origin", () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0' });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('are dropped; the answer keeps its own', async () => {
    const user = createUser(system);
    const res = await client(system, user.apiKey).post('/sources', { component_code: SOURCE });
    expect(res.status).toBe(200);
    const url = res.body.data.configured_props.http.endpoint_url as string;
    const answer = await eventually(async () => {
      const r = await fetch(url, { method: 'POST' });
      return r.status === 200 ? r : undefined;
    }, { what: 'the endpoint', timeoutMs: 30_000 });
    expect(await answer.text()).toBe('hi');
    for (const name of Object.keys(ORIGIN_WIDE)) expect([name, answer.headers.get(name)]).toEqual([name, null]);
    expect(answer.headers.get('x-own')).toBe('kept');
  });

  it('framing and hop-by-hop headers a component sets are dropped, never a 500', async () => {
    const user = createUser(system);
    const code = `module.exports = { name: "Framing", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
      async run() { this.http.respond({ status: 200, headers: { trailer: "x-foo", te: "trailers", "transfer-encoding": "chunked", "content-length": "99", connection: "close", "x-own": "kept" }, body: "framed" }); } };`;
    const res = await client(system, user.apiKey).post('/sources', { component_code: code });
    expect(res.status).toBe(200);
    const url = res.body.data.configured_props.http.endpoint_url as string;
    const answer = await eventually(async () => {
      const r = await fetch(url, { method: 'POST' });
      return r.status !== 404 ? r : undefined;
    }, { what: 'the endpoint', timeoutMs: 30_000 });
    expect([answer.status, await answer.text(), answer.headers.get('trailer'), answer.headers.get('x-own')]).toEqual([200, 'framed', null, 'kept']);
  });

  it('respond() with more than 100 headers or over 8 KiB of them is refused as any invalid respond(): the caller gets 502, the run an $errors event (they were relayed, and HTTP clients failed to read the answer)', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const deploy = async (headers: string): Promise<{ id: string; url: string }> => {
      const code = `module.exports = { name: "Many headers", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
        async run() { this.http.respond({ status: 200, headers: ${headers}, body: "answered" }); } };`;
      const res = await api.post('/sources', { component_code: code });
      expect(res.status).toBe(200);
      return { id: res.body.data.id, url: res.body.data.configured_props.http.endpoint_url };
    };
    const answerOf = async (url: string): Promise<{ status: number; headers: Headers; text: string }> => {
      const r = await eventually(async () => {
        const a = await fetch(url, { method: 'POST' });
        return a.status !== 404 ? a : undefined;
      }, { what: 'the endpoint', timeoutMs: 30_000 });
      return { status: r.status, headers: r.headers, text: await r.text() };
    };
    const refused = [
      [await deploy('Object.fromEntries(Array.from({ length: 20000 }, (_, i) => ["x-h" + i, "v"]))'), /^respond\(\): too many headers: 20000, at most 100 /],
      [await deploy('{ "x-big": "a".repeat(900 * 1024) }'), /^respond\(\): headers too large: 921609 bytes, at most 8192 /],
      [await deploy('{ "set-cookie": Array.from({ length: 101 }, (_, i) => "c" + i + "=1") }'), /^respond\(\): too many headers: 101, at most 100 /],
    ] as const;
    for (const [source, message] of refused) {
      const answer = await answerOf(source.url);
      const body = JSON.parse(answer.text) as { error: string; code: string };
      expect([answer.status, body.code]).toEqual([502, 'source_error']);
      expect(body.error.replace('the source failed before responding: ', '')).toMatch(message);
      const errors = await eventually(async () => {
        const res = await api.get(`/sources/${source.id}/event_summaries?event_name=%24errors&expand=event`);
        return res.body.data.length ? res.body.data : undefined;
      }, { what: 'the $errors event', timeoutMs: 30_000 });
      expect(JSON.stringify(errors[0].event)).toMatch(/respond\(\): (too many headers|headers too large)/);
    }
    // At the bound it is answered, and an HTTP client reads every header.
    const atBound = await deploy('Object.fromEntries(Array.from({ length: 100 }, (_, i) => ["x-h" + String(i).padStart(2, "0"), "v".repeat(69)]))');
    const answer = await answerOf(atBound.url);
    expect([answer.status, answer.text, answer.headers.get('x-h00'), answer.headers.get('x-h99')]).toEqual([200, 'answered', 'v'.repeat(69), 'v'.repeat(69)]);
  });
});
