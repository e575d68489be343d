import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';
import { interfaceAddress } from '../libs/net/src/test-support/interface-address';

/**
 * Services of this machine that are not the platform's, against a hostile tenant's component code.
 * Under npm start's settings (ALLOW_LOOPBACK=true, for local webhook receivers) component code
 * reached every one of them: a source read `CONFIG GET dir` from the machine's unauthenticated
 * Redis, the handshake of its MariaDB and RabbitMQ (whose guest user logs in from localhost — the
 * egress proxy's address). And whatever ALLOW_LOOPBACK said, a service bound to 0.0.0.0 answered
 * on the machine's own interface address, which the policy took for any public address.
 * Now component code reaches this machine only with SANDBOX_ALLOW_LOOPBACK=true as well (or what
 * SANDBOX_EGRESS_ALLOW lists), except the api's public port.
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
    // npm start's settings: loopback open to the platform's own requests; SANDBOX_ALLOW_LOOPBACK left at its default.
    system = await startSystem({ ALLOW_LOOPBACK: 'true', SANDBOX_ALLOW_LOOPBACK: 'false', HTTP_RATE_PER_SEC: '0' });
  });
  afterAll(async () => {
    await system?.stop();
    onLoopback?.close();
    onAll?.close();
  });

  it('refuses loopback and the interface addresses to component code, but not the api\'s own port', async () => {
    const user = createUser(system);
    const res = await client(system, user.apiKey).post('/sources', { component_code: DIALER });
    expect(res.status).toBe(200);
    const url = res.body.data.configured_props.http.endpoint_url as string;
    const local = (onLoopback.address() as AddressInfo).port;
    const all = (onAll.address() as AddressInfo).port;
    const own = interfaceAddress();
    const targets = [['127.0.0.1', local], ['localhost', local], ['127.0.0.2', all], ['::ffff:127.0.0.1', local], [own, all], [`::ffff:${own}`, all], ['127.0.0.1', Number(system.env.PORT)]];
    const answer = await eventually(async () => {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ targets }) });
      return r.status === 200 ? ((await r.json()) as Record<string, string>) : undefined;
    }, { what: 'the dialer', timeoutMs: 30_000 });
    for (const [host, port] of targets.slice(0, -1)) {
      expect([host, answer[`${host} ${port}`]]).toEqual([host, expect.stringMatching(/^ECONNREFUSED .*(a loopback address|an address of this machine) \(component code reaches this machine only with SANDBOX_ALLOW_LOOPBACK=true\)/)]);
    }
    // The api serves sources' endpoints to anyone: a hook may call its own endpoint (it answers 400 to PING).
    expect(answer[`127.0.0.1 ${system.env.PORT}`]).toMatch(/^ANSWERED HTTP\/1\.1 400/);
  });
});
