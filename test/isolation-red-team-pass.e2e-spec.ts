import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';
import { interfaceAddress } from '../libs/net/src/test-support/interface-address';

/**
 * A hostile tenant's component against the api behind a proxy on the same machine (TRUST_PROXY=127.0.0.1, as
 * README says to set it behind nginx there) with ALLOW_LOOPBACK=true (npm start's default). The egress proxy
 * connects from this machine, so the api took a component's own X-Forwarded-For for the proxy's word (called
 * directly, or through the proxy, which appends the address it saw: this machine's): another account's source got
 * an event with the client_ip the component chose, and the bounds per client address counted it as whoever it named.
 */
const VICTIM = `module.exports = { name: "Victim", version: "1", props: { http: "$.interface.http" },
  async run(event) { this.$emit({ client_ip: event.client_ip, marker: event.body.marker }); } };`;

const FORGER = `module.exports = { name: "Forger", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const out = {};
    for (const url of event.body.urls) {
      try {
        const r = await fetch(url, { method: "POST", headers: { "x-forwarded-for": "6.6.6.6", "content-type": "application/json" }, body: JSON.stringify({ marker: "forged" }) });
        out[url] = "HTTP " + r.status;
      } catch (e) { out[url] = String(e.cause ? e.cause.message : e.message); }
    }
    this.http.respond({ status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(out) });
  } };`;

/** A reverse proxy in front of the api, as nginx with `proxy_add_x_forwarded_for`: it appends the address it saw. */
function reverseProxy(target: string): Promise<Server> {
  const to = new URL(target);
  const srv = createServer((req, res) => {
    const seen = req.socket.remoteAddress?.replace(/^::ffff:/, '') ?? '';
    const xff = req.headers['x-forwarded-for'] ? `${req.headers['x-forwarded-for']}, ${seen}` : seen;
    const up = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, host: to.host, 'x-forwarded-for': xff } }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.writeHead(502).end());
    req.pipe(up);
  });
  return new Promise((r) => srv.listen(0, '0.0.0.0', () => r(srv)));
}

type Run = { status: string; steps: { error?: { name: string; message: string } }[] };

describe('the api behind a proxy on this machine, against component code', () => {
  let system: System;
  let proxy: Server;
  beforeAll(async () => {
    system = await startSystem({ ALLOW_LOOPBACK: 'true', TRUST_PROXY: '127.0.0.1', HTTP_RATE_PER_SEC: '0' });
    proxy = await reverseProxy(system.origin);
  });
  afterAll(async () => {
    await system?.stop();
    proxy?.close();
  });

  /** Two accounts: the victim's source emits the client_ip of each request it gets. */
  const victimAndAttacker = async () => {
    const victim = createUser(system);
    const v = await client(system, victim.apiKey).post('/sources', { component_code: VICTIM });
    expect(v.status).toBe(200);
    return { victim, attacker: createUser(system), sourceId: v.body.data.id as string, victimUrl: v.body.data.configured_props.http.endpoint_url as string };
  };

  it("refuses this machine to component code while TRUST_PROXY believes it: no client_ip of its choosing in another account's events", async () => {
    const { victim, attacker, sourceId, victimUrl } = await victimAndAttacker();
    const a = await client(system, attacker.apiKey).post('/sources', { component_code: FORGER });
    expect(a.status).toBe(200);

    // The proxy's word is believed: a request the test sends through it names its client.
    const proxied = await fetch(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}${new URL(victimUrl).pathname}`, { method: 'POST', headers: { 'x-forwarded-for': '7.7.7.7', 'content-type': 'application/json' }, body: JSON.stringify({ marker: 'proxied' }) });
    expect(proxied.status).toBe(200);

    const key = new URL(victimUrl).pathname;
    const port = new URL(victimUrl).port;
    const viaProxy = (proxy.address() as AddressInfo).port;
    const urls = [victimUrl, `http://127.0.0.2:${port}${key}`, `http://[::ffff:127.0.0.1]:${port}${key}`, `http://${interfaceAddress()}:${port}${key}`, `http://127.0.0.1:${viaProxy}${key}`, `http://${interfaceAddress()}:${viaProxy}${key}`];
    const answer = await eventually(async () => {
      const r = await fetch(a.body.data.configured_props.http.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ urls }) });
      return r.status === 200 ? ((await r.json()) as Record<string, string>) : undefined;
    }, { what: 'the forger', timeoutMs: 30_000 });
    for (const url of urls) expect([url, answer[url]]).toEqual([url, expect.stringMatching(/is (a loopback address|an address of this machine) \(component code does not reach this machine while TRUST_PROXY believes connections from this machine/)]);

    const events = await eventually(async () => {
      const r = await client(system, victim.apiKey).get(`/sources/${sourceId}/event_summaries?expand=event`);
      const data = (r.body?.data ?? []) as { event: { client_ip: string; marker: string } }[];
      return data.some((d) => d.event.marker === 'proxied') ? data : undefined;
    }, { what: "the victim's events" });
    expect(events.map((d) => d.event)).toEqual([{ client_ip: '7.7.7.7', marker: 'proxied' }]);
  });

  it("refuses $.send.http the headers a proxy writes: a workflow does not choose the client_ip of another account's events", async () => {
    const { victim, attacker, sourceId, victimUrl } = await victimAndAttacker();
    const api = client(system, attacker.apiKey);
    const run = async (name: string, headers: Record<string, string>, marker: string): Promise<Run> => {
      const code = `export default defineComponent({ async run({ $ }) { $.send.http({ url: ${JSON.stringify(victimUrl)}, headers: ${JSON.stringify(headers)}, data: { marker: ${JSON.stringify(marker)} } }); } });`;
      const created = await api.post('/workflows', { name, trigger: { manual: {} }, steps: [{ name: 'send', code }] });
      expect(created.status).toBe(200);
      expect((await api.post(`/workflows/${created.body.data.id}/run`, {})).status).toBe(202);
      return eventually(async () => (await api.get(`/workflows/${created.body.data.id}/runs`)).body.data?.[0] as Run | undefined, { what: `the run of ${name}`, timeoutMs: 30_000 });
    };
    for (const header of ['X-Forwarded-For', 'forwarded', 'x-forwarded-host', 'X-Forwarded-Proto']) {
      const r = await run(`forge-${header.toLowerCase()}`, { [header]: header === 'forwarded' ? 'for=5.5.5.5' : '5.5.5.5' }, 'forged');
      expect({ header, status: r.status, error: r.steps[0].error }).toEqual({ header, status: 'error', error: { name: 'SendError', message: `$.send.http(): header ${header} is a proxy's to set (it says who the client is; the platform's requests are not a proxy's)` } });
    }
    expect((await run('plain', { 'x-note': 'hello' }, 'plain')).status).toBe('success');
    const events = await eventually(async () => {
      const r = await client(system, victim.apiKey).get(`/sources/${sourceId}/event_summaries?expand=event`);
      const data = (r.body?.data ?? []) as { event: { client_ip: string; marker: string } }[];
      return data.some((d) => d.event.marker === 'plain') ? data : undefined;
    }, { what: "the victim's events" });
    expect(events.map((d) => d.event.marker)).toEqual(['plain']);
    expect(events[0].event.client_ip).not.toBe('5.5.5.5');
  });
});
