import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';
import { postUntilOk } from './support/http-sources';

/**
 * What docs/sandbox.md does not claim: an interval a run leaves behind goes on after the run ended, and after its
 * source is deleted, until the account's sandbox process stops (SANDBOX_IDLE_MS without a task). It fetches through
 * the egress proxy like any run (ALLOW_LOOPBACK=true, as the harness sets it, lets it reach a server on loopback).
 */
const STRAY = `module.exports = { name: "Stray", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    setInterval(() => { fetch(event.body.url).then((r) => r.text()).catch(() => {}); }, 100);
    this.http.respond({ status: 200, body: "left an interval" });
  } };`;

describe('an interval a run leaves behind', () => {
  let system: System;
  let receiver: Server;
  let hits = 0;

  beforeAll(async () => {
    receiver = createServer((_req, res) => { hits++; res.end('x'); });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', SANDBOX_IDLE_MS: '3000' });
  });
  afterAll(async () => {
    await system?.stop();
    receiver?.close();
  });

  it('goes on after its run ended and after its source was deleted, until the sandbox stops', async () => {
    const user = createUser(system);
    const res = await client(system, user.apiKey).post('/sources', { component_code: STRAY });
    expect(res.status).toBe(200);
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`;
    expect(await (await postUntilOk(res.body.data.configured_props.http.endpoint_url, { url })).text()).toBe('left an interval');
    expect((await client(system, user.apiKey).del(`/sources/${res.body.data.id}`)).status).toBe(204);
    const atDelete = hits;
    await eventually(async () => (hits >= atDelete + 5 ? true : undefined), { what: 'the interval to fetch after its source was deleted', timeoutMs: 20_000 });
    // The idle sandbox (SANDBOX_IDLE_MS, 3 s here) is stopped, and the interval with it.
    await eventually(async () => {
      const before = hits;
      await new Promise((r) => setTimeout(r, 1000));
      return hits === before ? true : undefined;
    }, { what: 'the interval to stop with its idle sandbox', timeoutMs: 30_000 });
  });
});
