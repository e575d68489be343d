import { connect, createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * A listening socket of component code (docs/sandbox.md, "Nothing survives its tenant"): nothing outside the sandbox
 * reaches it, and the component's own TCP client does not either: its connections go through the egress proxy, so
 * 127.0.0.1:<port> is the machine's loopback, where a host service on the same port answers (ALLOW_LOOPBACK=true,
 * as the harness sets it). A Unix socket in /tmp is reachable inside the sandbox.
 */
const LISTENER = `module.exports = { name: "Listener", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const net = require("net"), out = {};
    const port = event.body.port;
    out.listen = await new Promise((r) => {
      const s = net.createServer((c) => c.end("sandbox"));
      s.on("error", (e) => r("ERR " + e.code));
      s.listen(port, "0.0.0.0", () => { globalThis.__listener = s; r("listening"); });
    });
    out.tcp = await new Promise((r) => {
      const c = net.connect(port, "127.0.0.1");
      c.on("data", (d) => { r(String(d)); c.destroy(); });
      c.on("error", (e) => r("ERR " + e.code));
    });
    out.unix = await new Promise((r) => {
      const s = net.createServer((c) => c.end("sandbox unix"));
      s.on("error", (e) => r("ERR " + e.code));
      s.listen("/tmp/own.sock", () => {
        const c = net.connect({ path: "/tmp/own.sock" });
        c.on("data", (d) => { r(String(d)); c.destroy(); s.close(); });
        c.on("error", (e) => r("ERR " + e.code));
      });
    });
    this.http.respond({ status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(out) });
  } };`;

describe("a component's listening sockets", () => {
  let system: System;
  let host: Server;

  beforeAll(async () => {
    host = createServer((s) => s.end('host'));
    await new Promise<void>((r) => host.listen(0, '127.0.0.1', () => r()));
    system = await startSystem({ HTTP_RATE_PER_SEC: '0' });
  });
  afterAll(async () => {
    await system?.stop();
    host?.close();
  });

  it("are reached from nowhere outside the sandbox, and the component's own 127.0.0.1 is the machine's loopback", async () => {
    const port = (host.address() as AddressInfo).port;
    const user = createUser(system);
    const res = await client(system, user.apiKey).post('/sources', { component_code: LISTENER });
    expect(res.status).toBe(200);
    const url = res.body.data.configured_props.http.endpoint_url as string;
    const answer = await eventually(async () => {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ port }) });
      return r.status === 200 ? ((await r.json()) as Record<string, string>) : undefined;
    }, { what: 'the listener source', timeoutMs: 30_000 });
    // The sandbox listens on the port the host's server holds: its network namespace is its own.
    expect(answer).toEqual({ listen: 'listening', tcp: 'host', unix: 'sandbox unix' });
    // From outside, that port is the host's server, never the sandbox's listener.
    const got = await new Promise<string>((r) => {
      const c = connect(port, '127.0.0.1');
      c.on('data', (d) => { r(String(d)); c.destroy(); });
      c.on('error', (e) => r(`ERR ${(e as NodeJS.ErrnoException).code}`));
    });
    expect(got).toBe('host');
  });
});
