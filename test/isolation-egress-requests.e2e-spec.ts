import { createUser, TestUser } from './support/accounts';
import { startSystem, System } from './support/system';
import { deployHttpSource, postUntilOk } from './support/http-sources';

/** Asks its egress proxy for connections the address policy refuses, as fast as it can, for `ms`; answers how many. */
const REFUSED_LOOP = `module.exports = {
  name: "Refused loop", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const net = require("net"), end = Date.now() + event.body.ms;
    let refused = 0;
    const one = () => new Promise((r) => {
      const s = net.connect(80, "10.1.2.3");
      s.on("connect", () => { s.destroy(); r(); });
      s.on("error", (e) => { if (e.code === "ECONNREFUSED") refused++; r(); });
    });
    await Promise.all(Array.from({ length: 50 }, async () => { while (Date.now() < end) await one(); }));
    this.http.respond({ status: 200, body: String(refused) });
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

  it("logs an account's refused connections within a budget: a loop of them does not flood the app's log", async () => {
    const lines = () => system.logs('runner').split('\n').filter((l) => l.includes('sandbox connection refused') && l.includes(a.id));
    const refused = Number(await (await call(await deploy(a, REFUSED_LOOP), { ms: 4000 })).text());
    // Thousands of refused connections a second, each a line of the runner's log at info.
    expect(refused).toBeGreaterThan(1000);
    expect(lines().length).toBeGreaterThan(0);
    expect(lines().length).toBeLessThanOrEqual(150);
    // A line after the budget refilled says how many went unlogged.
    await new Promise((r) => setTimeout(r, 1500));
    await call(await deploy(a, REFUSED_LOOP), { ms: 10 });
    expect(lines().some((l) => /"unlogged":\d{3,}/.test(l))).toBe(true);
    expect(await (await call(await deploy(b, RESPONDER))).text()).toBe('pong');
  });
});
