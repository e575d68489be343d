import { createUser, TestUser } from './support/accounts';
import { startSystem, System } from './support/system';
import { deployHttpSource, postUntilOk } from './support/http-sources';

/**
 * Asks its egress proxy for connections the address policy refuses, as fast as it can, for `ms`; answers how many
 * failed with which reason (the address policy's, its budget of refused connections', another) and one of each.
 */
const REFUSED_LOOP = `module.exports = {
  name: "Refused loop", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const net = require("net"), end = Date.now() + event.body.ms;
    const count = { policy: 0, budget: 0, other: 0 }, sample = {};
    const one = () => new Promise((r) => {
      const s = net.connect(80, event.body.host || "10.1.2.3");
      s.on("connect", () => { s.destroy(); count.other++; r(); });
      s.on("error", (e) => {
        const kind = /private address/.test(e.message) ? "policy" : /SANDBOX_EGRESS_REFUSED_PER_SECOND/.test(e.message) ? "budget" : "other";
        count[kind]++;
        sample[kind] = e.code + " " + e.message;
        r();
      });
    });
    await Promise.all(Array.from({ length: 50 }, async () => { do await one(); while (Date.now() < end); }));
    this.http.respond({ status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ count, sample }) });
  },
};`;

interface LoopReport {
  count: { policy: number; budget: number; other: number };
  sample: Record<string, string>;
}

/** Connects to `n` names of its own at once (each looked up by the proxy); answers how each failed, by code. */
const LOOKUPS = `module.exports = {
  name: "Lookups", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const net = require("net"), codes = {}, sample = {};
    await Promise.all(Array.from({ length: event.body.n }, (_, i) => new Promise((r) => {
      const s = net.connect(80, "n" + i + "-" + Math.random().toString(36).slice(2) + ".invalid");
      s.on("connect", () => { s.destroy(); r(); });
      s.on("error", (e) => { codes[e.code] = (codes[e.code] || 0) + 1; sample[e.code] = e.message; r(); });
    })));
    this.http.respond({ status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ codes, sample }) });
  },
};`;

const RESPONDER = `module.exports = {
  name: "Responder", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run() { this.http.respond({ status: 200, body: "pong" }); },
};`;

/**
 * The egress proxy's requests, made by a hostile tenant: what the app does for each one must stay within a bound the
 * tenant cannot raise.
 */
describe("an account's requests to its egress proxy", () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;

  const deploy = async (user: TestUser, code: string): Promise<string> => (await deployHttpSource(system, user, code)).url;
  const call = postUntilOk;

  beforeAll(async () => {
    // The log level a deployment runs at (info): refused connections are logged there.
    system = await startSystem({ LOG_LEVEL: 'info', ALLOW_PRIVATE_ADDRESSES: 'false', HTTP_RATE_PER_SEC: '0', HTTP_RESPONSE_TIMEOUT_MS: '30000' });
    a = createUser(system);
    b = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("bounds an account's refused connections: past SANDBOX_EGRESS_REFUSED_PER_SECOND its next ones fail at once, another account's are judged", async () => {
    const loop = await deploy(a, REFUSED_LOOP);
    const other = await deploy(b, REFUSED_LOOP);
    const [flood, meanwhile] = await Promise.all([
      call(loop, { ms: 4000 }).then(async (r) => (await r.json()) as LoopReport),
      new Promise((r) => setTimeout(r, 1000)).then(async () => (await (await call(other, { ms: 0 })).json()) as LoopReport),
    ]);
    // Before: 6,000 requests a second reached the proxy, each looked up, judged and answered on the runner's thread.
    // Now a burst of 100 (ten seconds' worth of 10 a second) is judged, the rest fail in the sandbox itself.
    expect(flood.count.policy).toBeGreaterThan(0);
    expect(flood.count.policy).toBeLessThan(300);
    expect(flood.count.budget).toBeGreaterThan(1000);
    expect(flood.count.other).toBe(0);
    expect(flood.sample.budget).toMatch(/^ECONNREFUSED connect ECONNREFUSED 10\.1\.2\.3:80: the sandbox asked for too many refused connections \(SANDBOX_EGRESS_REFUSED_PER_SECOND\); its next ones are refused for \d+ ms/);
    // The other account's 50 requests, made while the flood went on, were judged by the policy.
    expect(meanwhile.count).toEqual({ policy: 50, budget: 0, other: 0 });
    expect(meanwhile.sample.policy).toMatch(/^ECONNREFUSED connect ECONNREFUSED 10\.1\.2\.3:80: 10\.1\.2\.3 is a private address/);
  });

  it("logs an account's refused connections within a budget: a loop of them does not flood the app's log", async () => {
    const c = createUser(system);
    const lines = () => system.logs('runner').split('\n').filter((l) => l.includes('sandbox connection refused') && l.includes(c.id));
    const report = (await (await call(await deploy(c, REFUSED_LOOP), { ms: 4000 })).json()) as LoopReport;
    expect(report.count.policy + report.count.budget).toBeGreaterThan(1000);
    expect(lines().length).toBeGreaterThan(0);
    expect(lines().length).toBeLessThanOrEqual(150);
    // A line after the budget refilled says how many went unlogged.
    await new Promise((r) => setTimeout(r, 1500));
    await call(await deploy(c, REFUSED_LOOP), { ms: 10 });
    expect(lines().some((l) => /"unlogged":\d+/.test(l))).toBe(true);
    expect(await (await call(await deploy(b, RESPONDER))).text()).toBe('pong');
  });

  it("bounds an account's lookups by name at once: past SANDBOX_EGRESS_LOOKUPS_AT_ONCE they fail with EAI_AGAIN, for it alone", async () => {
    const many = await deploy(createUser(system), LOOKUPS);
    const few = await deploy(createUser(system), LOOKUPS);
    const [flood, other] = await Promise.all([call(many, { n: 60 }), call(few, { n: 4 })].map(async (r) => (await (await r).json()) as { codes: Record<string, number>; sample: Record<string, string> }));
    // 8 names are looked up at once (two DNS queries each); the others fail at once instead of waiting for the resolver.
    expect(flood.codes.EAI_AGAIN).toBeGreaterThan(0);
    expect(flood.codes.ENOTFOUND).toBeGreaterThan(0);
    expect(flood.codes.EAI_AGAIN + flood.codes.ENOTFOUND).toBe(60);
    expect(flood.sample.EAI_AGAIN).toMatch(/^getaddrinfo EAI_AGAIN n\d+-\w+\.invalid: the sandbox has 8 lookups by name in progress, the most it may \(SANDBOX_EGRESS_LOOKUPS_AT_ONCE\)$/);
    expect(other.codes).toEqual({ ENOTFOUND: 4 });
  });
});
