import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';
import { interfaceAddress } from '../libs/net/src/test-support/interface-address';

/**
 * Services of this machine that are not the platform's, against a hostile tenant's component code
 * under ALLOW_LOOPBACK=false (a shared deployment). Loopback was refused, but a service bound to
 * 0.0.0.0 answered on the machine's own interface address, which the sandbox's policy took for any
 * public address. Now every address of this machine counts as loopback for component code too.
 */
const DIALER = `module.exports = { name: "Dialer", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const net = require("net"), out = {};
    for (const [host, port] of event.body.targets) {
      out[host + " " + port] = await new Promise((r) => {
        const s = net.connect(port, host);
        s.on("connect", () => { s.write("PING\\r\\n"); });
        s.on("data", (d) => { r("ANSWERED " + d.toString().trim()); s.destroy(); });
        s.on("error", (e) => r(e.code + " " + e.message));
      });
    }
    this.http.respond({ status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(out) });
  } };`;

/** A stand-in for Redis: answers PING with +PONG. */
function pong(host: string): Promise<Server> {
  const srv = createServer((s) => s.on('data', () => s.end('+PONG\r\n')));
  return new Promise((r) => srv.listen(0, host, () => r(srv)));
}

describe("this machine's own services against component code", () => {
  let system: System;
  let onLoopback: Server;
  let onAll: Server;

  beforeAll(async () => {
    onLoopback = await pong('127.0.0.1');
    onAll = await pong('0.0.0.0');
    system = await startSystem({ ALLOW_LOOPBACK: 'false', HTTP_RATE_PER_SEC: '0' });
  });
  afterAll(async () => {
    await system?.stop();
    onLoopback?.close();
    onAll?.close();
  });

  it('refuses loopback and the interface addresses to component code', async () => {
    const user = createUser(system);
    const res = await client(system, user.apiKey).post('/sources', { component_code: DIALER });
    expect(res.status).toBe(200);
    const url = res.body.data.configured_props.http.endpoint_url as string;
    const local = (onLoopback.address() as AddressInfo).port;
    const all = (onAll.address() as AddressInfo).port;
    const own = interfaceAddress();
    const targets = [['127.0.0.1', local], ['localhost', local], ['127.0.0.2', all], ['::ffff:127.0.0.1', local], [own, all], [`::ffff:${own}`, all]];
    const answer = await eventually(async () => {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ targets }) });
      return r.status === 200 ? ((await r.json()) as Record<string, string>) : undefined;
    }, { what: 'the dialer', timeoutMs: 30_000 });
    for (const [host, port] of targets) {
      expect([host, answer[`${host} ${port}`]]).toEqual([host, expect.stringMatching(/^ECONNREFUSED .*(a loopback address|an address of this machine) \(component code reaches this machine only with ALLOW_LOOPBACK=true\)/)]);
    }
  });
});
