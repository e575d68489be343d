import { createServer, type AddressInfo, type Server } from 'node:net';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';
import { deployHttpSource, postUntilOk } from './support/http-sources';

/**
 * A hostile tenant against the platform's shared processes: its own database, the
 * descriptors of the app that runs its sandbox, and the size of what its sandbox
 * sends back. Each probe once got through (the platform's Postgres answered
 * component code, a 100-byte component took the api down, an egress flood filled
 * the runner's descriptor table); each must now fail for the attacker alone.
 */
const RESPONDER = `module.exports = {
  name: "Responder", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run() { this.http.respond({ status: 200, body: "pong" }); },
};`;

/** Dials each target (through the sandbox's egress, as any client library would) and answers what happened. */
const DIALER = `module.exports = {
  name: "Dialer", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const net = require("net"), out = {};
    for (const [host, port] of event.body.targets) {
      out[host + " " + port] = await new Promise((r) => {
        const s = net.connect(port, host);
        s.on("connect", () => { r("CONNECTED"); s.destroy(); });
        s.on("error", (e) => r(e.code + " " + e.message));
      });
    }
    this.http.respond({ status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(out) });
  },
};`;

/** Asks the egress proxy for many connections and never claims them: each one held descriptors of the runner. */
const FLOODER = `module.exports = {
  name: "Flooder", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const net = require("net");
    let ok = 0, refused = 0, reason = "";
    const ask = () => new Promise((r) => {
      const s = net.connect({ path: "/run/egress/ctl.sock" });
      let b = "";
      s.on("data", (d) => { b += d; });
      s.on("close", () => { if (b.includes('"ok":true')) ok++; else { refused++; if (b.includes("SANDBOX_EGRESS_MAX_CONNECTIONS")) reason = b; } r(); });
      s.on("error", () => { refused++; r(); });
      s.write(JSON.stringify({ host: "127.0.0.1", port: event.body.port }) + "\\n");
    });
    for (let i = 0; i < 6; i++) await Promise.all(Array.from({ length: 100 }, ask));
    this.http.respond({ status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ ok, refused, reason }) });
  },
};`;

/**
 * Opens connections through the egress and keeps them, answers how many connected, then kills its own sandbox: the
 * runner ended its side of each connection and kept it until the server closed its own, which a server of the tenant's
 * never does. Each new sandbox had a new count of SANDBOX_EGRESS_MAX_CONNECTIONS.
 */
const HOARDER = `module.exports = {
  name: "Hoarder", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const net = require("net");
    const connected = await Promise.all(Array.from({ length: event.body.n }, () => new Promise((r) => {
      const s = net.connect(event.body.port, "127.0.0.1");
      s.on("connect", () => r(1));
      s.on("error", () => r(0));
    })));
    this.http.respond({ status: 200, body: String(connected.reduce((a, b) => a + b, 0)) });
    await new Promise((r) => setTimeout(r, 300));
    process.kill(process.pid);
  },
};`;

const MIB = 1024 * 1024;

/** Downloads from and uploads to a server as fast as the egress lets it, for `ms`; answers the bytes it received. */
const MOVER = `module.exports = {
  name: "Mover", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const net = require("net"), chunk = Buffer.alloc(65536, 120), socks = [];
    let received = 0, stop = false;
    for (let i = 0; i < 4; i++) {
      const s = net.connect(event.body.port, "127.0.0.1");
      s.on("error", () => {});
      s.on("data", (d) => { received += d.length; });
      const push = () => { while (!stop && s.write(chunk)); };
      s.on("drain", push);
      s.on("connect", push);
      socks.push(s);
    }
    await new Promise((r) => setTimeout(r, event.body.ms));
    stop = true;
    for (const s of socks) s.destroy();
    this.http.respond({ status: 200, body: String(received) });
  },
};`;

/** Sends 1 MiB chunks to whoever connects, as fast as they are taken, and counts what it is sent. */
async function blaster(): Promise<{ server: Server; port: number; received: () => number }> {
  const chunk = Buffer.alloc(1 << 20, 121);
  let received = 0;
  const server = createServer((s) => {
    const push = () => { while (!s.destroyed && s.write(chunk)); };
    s.on('drain', push);
    s.on('data', (d) => (received += d.length));
    s.on('error', () => undefined);
    push();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, port: (server.address() as AddressInfo).port, received: () => received };
}

describe('the platform against one hostile tenant', () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;
  let responder: string;

  const deploy = async (user: TestUser, code: string): Promise<string> => (await deployHttpSource(system, user, code)).url;
  const call = postUntilOk;
  const platformUp = async (): Promise<void> => {
    expect(await (await call(responder)).text()).toBe('pong');
    expect((await fetch(`${system.origin}/healthz`)).status).toBe(200);
    for (const [name, proc] of system.procs) expect([name, proc.exitCode, proc.signalCode]).toEqual([name, null, null]);
  };

  beforeAll(async () => {
    // Loopback open, as under npm start and in the other tests; no SANDBOX_EGRESS_DENY: the apps must refuse their Postgres themselves.
    system = await startSystem({ ALLOW_LOOPBACK: 'true', SANDBOX_EGRESS_DENY: '', SANDBOX_EGRESS_MAX_CONNECTIONS: '50', SANDBOX_EGRESS_BYTES_PER_SECOND: String(MIB), HTTP_RATE_PER_SEC: '0', HTTP_RESPONSE_TIMEOUT_MS: '30000' });
    a = createUser(system);
    b = createUser(system);
    responder = await deploy(b, RESPONDER);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("refuses the platform's Postgres to a source (runner) and to options() (api), on every local address", async () => {
    const pg = new URL(system.databaseUrl);
    const port = Number(pg.port || 5432);
    // Also its IPv4 address written in IPv6 forms that reach it through a NAT64 or 6to4 gateway (and the IPv4-compatible
    // form): the proxy once judged them as written, missed the deny rule and tried to connect.
    const v4 = pg.hostname === 'localhost' ? '127.0.0.1' : pg.hostname;
    const hex = v4.split('.').map(Number).reduce((h, b, i) => h + (i === 2 ? ':' : '') + b.toString(16).padStart(2, '0'), '');
    // NAT64's local-use prefix and SIIT's IPv4-translated form were judged as written (public IPv6 addresses).
    const targets = [[pg.hostname, port], ['127.0.0.2', port], ['::ffff:127.0.0.1', port], ['localhost', port], [`64:ff9b::${v4}`, port], [`2002:${hex}::1`, port], [`::${v4}`, port], [`64:ff9b:1::${v4}`, port], [`::ffff:0:${v4}`, port]];
    const report = (await (await call(await deploy(a, DIALER), { targets })).json()) as Record<string, string>;
    for (const [host] of targets) expect([host, report[`${host} ${port}`]]).toEqual([host, expect.stringMatching(/^ECONNREFUSED .*service of the platform/)]);

    const code = `module.exports = { name: "Opts", version: "1", props: { pick: { type: "string", label: "Pick", async options() {
      return await new Promise((r) => { const s = require("net").connect(${port}, ${JSON.stringify(pg.hostname)}); s.on("connect", () => { r(["CONNECTED"]); s.destroy(); }); s.on("error", (e) => r([e.code + " " + e.message])); });
    } } }, async run() {} };`;
    const saved = await client(system, a.apiKey).post('/components', { component_code: code });
    expect(saved.status).toBe(200);
    const res = await client(system, a.apiKey).post(`/components/${saved.body.data.id}/props/pick/options`, {});
    expect([res.status, res.body.data?.options]).toEqual([200, [expect.stringMatching(/^ECONNREFUSED .*service of the platform/)]]);
  });

  it("bounds a component's description: a string repeated by reference does not reach the api", async () => {
    // About 100 bytes of code, 40 MB of description once serialized (the api died at 200 MB).
    const code = 'const L = "y".repeat(1000); module.exports = { name: "big", version: "1", props: Object.fromEntries(Array.from({ length: 20000 }, (_, i) => ["p" + i, { type: "string", label: L, description: L }])), async run() {} };';
    const res = await client(system, a.apiKey).post('/components', { component_code: code });
    expect([res.status, res.body.code]).toEqual([400, 'invalid_component']);
    expect(res.body.error).toMatch(/ResultSizeLimitError|over the 8388608 bytes a sandbox may send back/);
    await platformUp();
  });

  it("bounds options() even when the component replaced the JSON the sandbox measures with", async () => {
    const code = `module.exports = { name: "Liar", version: "1", props: { pick: { type: "string", label: "Pick", async options() {
      JSON.stringify = () => "[]";
      const L = "z".repeat(10000);
      return Array.from({ length: 1000 }, () => L);
    } } }, async run() {} };`;
    const saved = await client(system, a.apiKey).post('/components', { component_code: code });
    expect(saved.status).toBe(200);
    const res = await client(system, a.apiKey).post(`/components/${saved.body.data.id}/props/pick/options`, {});
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.text.length).toBeLessThan(10_000);
    expect(res.text).toMatch(/ResultSizeLimitError|a sandbox may send back/);
    await platformUp();
  });

  it('caps the connections one account holds open through the egress proxy', async () => {
    const runner = system.procs.get('runner')!.pid!;
    const { readdirSync } = await import('node:fs');
    const fdsBefore = readdirSync(`/proc/${runner}/fd`).length;
    const report = (await (await call(await deploy(a, FLOODER), { port: Number(system.env.PORT) })).json()) as { ok: number; refused: number; reason: string };
    expect(report.ok).toBeLessThanOrEqual(50);
    expect(report.refused).toBeGreaterThanOrEqual(550);
    expect(report.reason).toMatch(/SANDBOX_EGRESS_MAX_CONNECTIONS/);
    // 600 unclaimed tunnels held about 1,200 descriptors of the runner for 10 s.
    expect(readdirSync(`/proc/${runner}/fd`).length - fdsBefore).toBeLessThan(400);
    await platformUp();
  });

  it("closes an account's connections when its sandbox stops: a restarted sandbox does not add to what it holds", async () => {
    // A server of the tenant's own that never closes its side of a connection (half-open is allowed by TCP).
    const sink = createServer({ allowHalfOpen: true }, (s) => s.on('error', () => undefined));
    await new Promise<void>((r) => sink.listen(0, '127.0.0.1', () => r()));
    const { readdirSync } = await import('node:fs');
    const fds = () => readdirSync(`/proc/${system.procs.get('runner')!.pid!}/fd`).length;
    try {
      const port = (sink.address() as AddressInfo).port;
      const hoarder = await deploy(createUser(system), HOARDER);
      const before = fds();
      for (let round = 0; round < 3; round++) expect(await (await call(hoarder, { n: 40, port })).text()).toBe('40');
      // Each sandbox died with its 40 connections; the runner kept every one of them (120 descriptors, 40 more for
      // each restart, past SANDBOX_EGRESS_MAX_CONNECTIONS), until it ran out.
      await eventually(async () => fds() - before < 40, { what: 'the connections of the stopped sandboxes to close', timeoutMs: 15_000 });
    } finally {
      sink.close();
    }
    await platformUp();
  });

  it('caps the bytes one account moves through the egress proxy, both ways', async () => {
    // Every byte of a tunnel is copied on the thread of the app that runs the sandbox: one source reading from a fast
    // server at 355 MB/s kept the runner's thread busy, and another account's source answered a tenth as many requests.
    const server = await blaster();
    try {
      // An account of its own: the one above still holds its 50 connections for a few seconds.
      const received = Number(await (await call(await deploy(createUser(system), MOVER), { port: server.port, ms: 3000 })).text());
      const moved = received + server.received();
      expect(received).toBeGreaterThan(0);
      // A burst of ten seconds' worth, then 1 MiB a second: 13 MiB in 3 s (before, hundreds of MiB).
      expect(moved).toBeLessThan(16 * MIB);
    } finally {
      server.server.close();
    }
    await platformUp();
  });
});
