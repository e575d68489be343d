import { createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';
import { deployHttpSource } from './support/http-sources';

/**
 * A sandbox's stderr is a pipe to the app (it tells a heap exhaustion), and component code can write to the
 * descriptor itself. A loop of writes there once made the runner read as fast as the sandbox wrote: hundreds of
 * MB a second, a third of the runner's thread, for as long as the loop ran (it outlived its run). Now the app reads
 * at most 64 KiB a second of it, and the sandbox's writes wait.
 */
const FLOODER = `module.exports = { name: "Flooder", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run() {
    const fs = require("fs"), chunk = Buffer.alloc(65536, 0x41), until = Date.now() + 2000;
    let written = 0;
    while (Date.now() < until) {
      const n = await Promise.race([new Promise((r) => fs.write(2, chunk, (e, n) => r(e ? 0 : n))), new Promise((r) => setTimeout(() => r(-1), until - Date.now()))]);
      if (n < 0) break;
      written += n;
    }
    this.http.respond({ status: 200, body: String(written) });
  } };`;
const RESPONDER = `module.exports = { name: "R", version: "1", props: { http: { type: "$.interface.http", customResponse: true } }, async run() { this.http.respond({ status: 200, body: "pong" }); } };`;

describe("a sandbox that floods its stderr", () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0' }, { apps: ['api', 'runner'] });
    a = createUser(system);
    b = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const deploy = async (user: TestUser, code: string): Promise<string> => (await deployHttpSource(system, user, code)).url;
  const call = (url: string): Promise<string> =>
    eventually(async () => {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      return r.status === 200 ? r.text() : undefined;
    }, { what: `${url} to answer`, timeoutMs: 30_000 });

  it('is read at most 64 KiB a second: its writes wait, and another account goes on', async () => {
    const responder = await deploy(b, RESPONDER);
    expect(await call(responder)).toBe('pong');
    const written = Number(await call(await deploy(a, FLOODER)));
    // Two seconds of reading (two budgets), the pipe's buffer and a write in flight: well under 1 MiB (before: hundreds of MB).
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(1024 * 1024);
    expect(await call(responder)).toBe('pong');
  });
});
