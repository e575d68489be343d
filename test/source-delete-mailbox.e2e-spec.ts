import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { client, createUser, TestUser } from './support/accounts';
import { deployHttpSource, postUntilOk } from './support/http-sources';
import { eventually, startSystem, System } from './support/system';

/** Each run tells the test's server it ran (`/ran/<n>`), then takes 300 ms. */
const slowSource = (port: number) => `module.exports = {
  name: "Slow", version: "0.0.1",
  props: { http: "$.interface.http" },
  async run(event) {
    await fetch("http://127.0.0.1:${port}/ran/" + event.body.n).then((r) => r.text());
    await new Promise((r) => setTimeout(r, 300));
    this.$emit({ n: event.body.n });
  },
};`;

/**
 * A deleted source's invocations already in its runner's mailbox are not run: the deletion goes before them. They
 * ran first, in arrival order: a source may hold a quarter of its partition's messages there, and a hostile one
 * (16 MB of logs a run) went on running, and storing events every other account's waited behind, for minutes
 * after its deletion.
 */
describe('deleting a source with a backlog in its runner', () => {
  let system: System;
  let user: TestUser;
  let server: Server;
  const ran: number[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      ran.push(Number(req.url?.split('/').pop()));
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    // One invocation per sandbox task, so the backlog waits in the mailbox rather than in one batch.
    system = await startSystem({ RUN_BATCH_MAX_INVOCATIONS: '1', HTTP_RATE_PER_SEC: '0' });
    user = createUser(system);
  });
  afterAll(async () => {
    await system?.stop();
    server?.close();
  });

  it('stops running it at once, and the runner answers the next source as usual', async () => {
    const port = (server.address() as AddressInfo).port;
    const src = await deployHttpSource(system, user, slowSource(port));
    await postUntilOk(src.url, { n: 0 });
    for (let n = 1; n < 40; n++) {
      const r = await fetch(src.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
      expect(r.status).toBe(200);
    }
    await eventually(async () => ran.length >= 3, { what: 'the first runs', timeoutMs: 30_000 });

    expect((await client(system, user.apiKey).del(`/sources/${src.id}`)).status).toBe(204);
    const atDelete = ran.length;
    // 36 more runs would take 11 s; the one in flight ends within 0.3 s.
    await new Promise((r) => setTimeout(r, 4000));
    expect(ran.length - atDelete).toBeLessThanOrEqual(1);
    expect(ran.length).toBeLessThan(10);

    // The runner is free for the account's next source.
    const next = await deployHttpSource(system, user, slowSource(port));
    await postUntilOk(next.url, { n: 1000 });
    await eventually(async () => ran.includes(1000), { what: 'the next source to run', timeoutMs: 30_000 });
  });
});
