import { createServer, Server } from 'node:http';
import { partitionOf } from '@app/contracts';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';

/**
 * A workflow run in progress on a runner that is killed (SIGKILL) is run again
 * from its trigger event on the surviving replica: nothing is lost (at-least-once).
 */
const SLOW = `module.exports = {
  name: "slow", version: "1", type: "action",
  async run({ steps, $ }) {
    const n = steps.trigger.event.n;
    await new Promise((resolve, reject) => {
      const req = require("node:http").request("__URL__" + "?n=" + n, { method: "POST" }, (res) => { res.resume(); res.on("end", resolve); });
      req.on("error", reject);
      req.end();
    });
    await new Promise((r) => setTimeout(r, 4000));
    $.send.emit({ raw_event: { n } });
  },
};`;

describe('workflow runs survive a runner killed mid-run', () => {
  let system: System;
  let user: TestUser;
  let server: Server;
  const starts: string[] = [];
  const ports: Record<string, number> = {};

  const startRunner = async (name: string): Promise<void> => {
    ports[name] = await freePort();
    await system.startApp('runner', name, { RUNNER_METRICS_PORT: String(ports[name]), RUNNER_REPLICA_ID: name });
  };
  const partitions = async (name: string): Promise<number[] | undefined> => {
    const r = await fetch(`http://127.0.0.1:${ports[name]}/healthz`).catch(() => undefined);
    return r?.ok ? ((await r.json()) as { partitions: number[] }).partitions : undefined;
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      starts.push(new URL(req.url ?? '/', 'http://x').searchParams.get('n') ?? '');
      res.writeHead(200).end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    system = await startSystem({ LEASE_TTL_MS: '3000', INVOCATION_ACK_WAIT_MS: '3000', PARTITIONS: '8' }, { apps: ['api', 'delivery'] });
    user = createUser(system);
    await startRunner('runnerA');
    await startRunner('runnerB');
  });
  afterAll(async () => {
    await system?.stop();
    await new Promise((r) => server?.close(r));
  });

  it('reruns the interrupted run on the other replica', async () => {
    const api = client(system, user.apiKey);
    await eventually(async () => (await partitions('runnerA'))?.length === 4 && (await partitions('runnerB'))?.length === 4, { what: 'an even split', timeoutMs: 20_000 });
    const onB = new Set(await partitions('runnerB'));
    const code = SLOW.replace('__URL__', `http://127.0.0.1:${(server.address() as { port: number }).port}/start`);
    let id = '';
    for (let i = 0; i < 30 && !id; i++) {
      const wf = (await api.post('/workflows', { name: `slow-${i}`, trigger: { manual: {} }, steps: [{ name: 'slow', code }] })).body.data;
      if (onB.has(partitionOf(wf.id, 8))) id = wf.id;
      else await api.del(`/workflows/${wf.id}`);
    }
    expect(id).not.toBe('');
    await eventually(async () => (await api.post(`/workflows/${id}/run`, { event: { n: 1 } })).status === 202);
    await eventually(async () => starts.includes('1'), { what: 'the run to start on runnerB', timeoutMs: 20_000 });
    await system.stopApp('runnerB', 'SIGKILL');

    const emits = async () => (await api.get(`/workflows/${id}/event_summaries?expand=event`)).body.data as { event: { raw_event: { n: number } } }[];
    const got = await eventually(async () => ((await emits()).length ? emits() : undefined), { what: 'the rerun to finish on runnerA', timeoutMs: 40_000 });
    expect(got.map((e) => e.event.raw_event.n)).toEqual([1]);
    expect(starts.filter((n) => n === '1').length).toBeGreaterThanOrEqual(2);
  });
});
