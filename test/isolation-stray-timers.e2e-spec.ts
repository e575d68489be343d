import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type NatsConnection } from 'nats';
import { decodeJson, Names, type RestartSandboxes } from '@app/contracts';
import { need } from './support/env';
import { client, createUser, type TestUser } from './support/accounts';
import { scrapeMetrics } from './support/metrics';
import { eventually, freePort, startSystem, System } from './support/system';
import { postUntilOk } from './support/http-sources';

/**
 * An interval a run leaves behind goes on after the run ended, in the account's sandbox process (docs/sandbox.md,
 * what is not claimed). Deleting its source (or its workflow) retires that process on every runner: it takes no new
 * task, and stops once its runs in flight are done, the interval with it. The account's other sources go on: their
 * runs in flight then finish where they are, once (a restart would run them again). The intervals fetch through the
 * egress proxy (ALLOW_LOOPBACK=true, as the harness sets it, lets them reach a server on loopback).
 */
const STRAY = `module.exports = { name: "Stray", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    setInterval(() => { fetch(event.body.url).then((r) => r.text()).catch(() => {}); }, 100);
    this.http.respond({ status: 200, body: "left an interval" });
  } };`;

/** Tells the receiver it started (a run again would tell it twice), waits, then emits and answers once. */
const BUSY = `module.exports = { name: "Busy", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const { url, n, waitMs } = event.body;
    await fetch(url + "/busy-" + n).then((r) => r.text());
    await new Promise((r) => setTimeout(r, waitMs));
    this.$emit({ n });
    this.http.respond({ status: 200, body: String(n) });
  } };`;

const TRIGGER = `module.exports = { name: "Trigger", version: "1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };`;

const STRAY_STEP = `export default defineComponent({ async run({ steps }) {
  setInterval(() => { fetch(steps.trigger.event.url).then((r) => r.text()).catch(() => {}); }, 100);
  return "left an interval";
} })`;

describe('an interval a run leaves behind', () => {
  let system: System;
  let receiver: Server;
  const paths: string[] = [];
  let base = '';
  /** What the runners hear on ctl.restart-sandboxes (as the runner's NATS user). */
  let heard: RestartSandboxes[] = [];
  let nc: NatsConnection;
  const count = (path: string) => paths.filter((p) => p === path).length;
  const retirements = async (): Promise<number> => (await scrapeMetrics(`http://127.0.0.1:${system.env.RUNNER_METRICS_PORT}/metrics`)).runner_sandbox_retirements_total ?? 0;
  /** Resolves once `path` has had no request for a second (bounded: it must stop within 30 s). */
  const stopped = (path: string, what: string) =>
    eventually(
      async () => {
        const before = count(path);
        await new Promise((r) => setTimeout(r, 1000));
        return count(path) === before ? true : undefined;
      },
      { what, timeoutMs: 30_000 },
    );
  const source = async (user: TestUser, code: string): Promise<{ id: string; url: string; componentId: string }> => {
    const res = await client(system, user.apiKey).post('/sources', { component_code: code });
    expect(res.status).toBe(200);
    return { id: res.body.data.id, url: res.body.data.configured_props.http.endpoint_url, componentId: res.body.data.component_id };
  };
  const call = async (url: string, body: Record<string, unknown>): Promise<{ status: number; text: string }> => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, text: await res.text() };
  };

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      paths.push(req.url ?? '');
      res.end('x');
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    // Sandboxes never idle out here: only the deletion can stop the interval.
    system = await startSystem({ HTTP_RATE_PER_SEC: '0', HTTP_RESPONSE_TIMEOUT_MS: '60000', SANDBOX_IDLE_MS: '600000', RUNNER_METRICS_PORT: String(await freePort()) });
    const runner = system.nats.runner;
    nc = await connect({ servers: need('TEST_NATS_URL'), user: runner.user, pass: runner.password, inboxPrefix: runner.inboxPrefix });
    nc.subscribe(new Names(system.natsPrefix).restartSandboxes, { callback: (_e, m) => heard.push(decodeJson<RestartSandboxes>(m.data)) });
    await nc.flush();
  });
  beforeEach(() => {
    heard = [];
  });
  afterAll(async () => {
    await nc?.close();
    await system?.stop();
    receiver?.close();
  });

  /**
   * `deactivated`: the source is deactivated before it is deleted, so that no hook of it runs at the deletion: the
   * replica that would run it retires the process after it too, the only one that retires without being told (a
   * single runner here); other replicas only hear the api, as this one then does.
   */
  const deleteBesideBusyRuns = async (tag: string, deactivated: boolean) => {
    const user = createUser(system);
    const stray = await source(user, STRAY);
    const busy = await source(user, BUSY);
    const url = `${base}/${tag}`;
    await postUntilOk(busy.url, { url, n: 0, waitMs: 0 });
    expect(await (await postUntilOk(stray.url, { url: `${url}/stray` })).text()).toBe('left an interval');
    await eventually(async () => (count(`/${tag}/stray`) >= 5 ? true : undefined), { what: 'the interval to fetch after its run ended' });
    if (deactivated) {
      expect((await client(system, user.apiKey).put(`/sources/${stray.id}`, { component_id: stray.componentId, active: false })).status).toBe(200);
      const atDeactivation = count(`/${tag}/stray`);
      await eventually(async () => (count(`/${tag}/stray`) >= atDeactivation + 5 ? true : undefined), { what: 'the interval to go on after its source was deactivated' });
    }

    // Three runs of the other source in flight in the same sandbox process when the stray source is deleted.
    const inFlight = [1, 2, 3].map((n) => call(busy.url, { url, n, waitMs: 3000 }));
    await eventually(async () => ([1, 2, 3].every((n) => count(`/${tag}/busy-${n}`) === 1) ? true : undefined), { what: 'the busy runs to start' });
    const before = await retirements();
    expect((await client(system, user.apiKey).del(`/sources/${stray.id}`)).status).toBe(204);
    await eventually(async () => ((await retirements()) > before ? true : undefined), { what: "the runner to retire the account's sandbox process" });
    // A new run of the account does not wait for the retired process: it starts a new one.
    expect(await call(busy.url, { url, n: 4, waitMs: 0 })).toEqual({ status: 200, text: '4' });
    expect(await Promise.all(inFlight)).toEqual([1, 2, 3].map((n) => ({ status: 200, text: String(n) })));

    await stopped(`/${tag}/stray`, 'the interval of the deleted source to stop');
    expect([0, 1, 2, 3, 4].map((n) => count(`/${tag}/busy-${n}`))).toEqual([1, 1, 1, 1, 1]);
    const emitted = await eventually(
      async () => {
        const res = await client(system, user.apiKey).get(`/sources/${busy.id}/event_summaries?expand=event`);
        return res.body?.data?.length >= 5 ? (res.body.data as { event: { n: number } }[]) : undefined;
      },
      { what: 'the five events indexed' },
    );
    expect(emitted.map((e) => e.event.n).sort()).toEqual([0, 1, 2, 3, 4]);
    // One retirement per deletion, published once.
    expect(heard).toEqual([{ id: expect.any(String), accounts: [user.id], retire: true }]);
  };

  it("stops once its source is deleted, while the account's busy source goes on and runs each invocation once", async () => {
    await deleteBesideBusyRuns('active', false);
  });

  it('stops once its source is deleted when the runner only hears of it (no hook runs at the deletion)', async () => {
    await deleteBesideBusyRuns('inactive', true);
  });

  it('stops once its workflow is deleted', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const created = await api.post('/workflows', { name: 'stray', trigger: { manual: {} }, steps: [{ name: 'leave', code: STRAY_STEP }] });
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    expect((await api.post(`/workflows/${id}/run`, { event: { url: `${base}/wf-stray` } })).status).toBe(202);
    await eventually(async () => (count('/wf-stray') >= 5 ? true : undefined), { what: 'the interval of the workflow step to fetch', timeoutMs: 60_000 });
    const before = await retirements();
    expect((await api.del(`/workflows/${id}`)).status).toBe(204);
    await eventually(async () => ((await retirements()) > before ? true : undefined), { what: "the runner to retire the account's sandbox process" });
    await stopped('/wf-stray', 'the interval of the deleted workflow to stop');
    expect(heard).toEqual([{ id: expect.any(String), accounts: [user.id], retire: true }]);
  });

  it("stops in the api's own sandbox process too, where saving a component ran its top-level code", async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    // Saved, never deployed: only the api (reading its props) runs it; the interval runs in the api's process alone.
    const onSave = `setInterval(() => { fetch(${JSON.stringify(`${base}/api-stray`)}).then((r) => r.text()).catch(() => {}); }, 100);
      module.exports = { name: "Read", version: "1", props: {}, async run() {} };`;
    expect((await api.post('/components', { component_code: onSave })).status).toBe(200);
    await eventually(async () => (count('/api-stray') >= 5 ? true : undefined), { what: "the interval to fetch from the api's sandbox process" });
    // Any deletion of the account's retires its processes on every app.
    const other = await source(user, TRIGGER);
    expect((await api.del(`/sources/${other.id}`)).status).toBe(204);
    await stopped('/api-stray', "the interval in the api's sandbox process to stop");
    // The account's next read starts a new process.
    expect((await api.post('/components', { component_code: TRIGGER })).status).toBe(200);
  });

  it('retires once for a workflow and the trigger source it deletes with it', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const created = await api.post('/workflows', { name: 'managed', trigger: { source: { code: TRIGGER, props: {} } }, steps: [{ name: 'leave', code: STRAY_STEP }] });
    expect(created.status).toBe(200);
    expect((await api.del(`/workflows/${created.body.data.id}`)).status).toBe(204);
    await eventually(async () => (heard.length ? true : undefined), { what: 'the retirement to be published' });
    // Both were published before the answer: a second one would be here by the next round trip to the server.
    await nc.flush();
    expect(heard).toEqual([{ id: expect.any(String), accounts: [user.id], retire: true }]);
  });
});
