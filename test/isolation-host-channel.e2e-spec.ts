import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';
import { deployHttpSource } from './support/http-sources';

/**
 * A hostile tenant against what its sandbox sends back to the app. Each probe once got through:
 *
 * - Component code in a worker thread can write to any open descriptor of its sandbox process
 *   (Node's permission model does not check them), so it wrote straight to the sandbox's
 *   channel to the app: a frame header announcing 4 GiB, then data, and the runner buffered it
 *   until it died — every account's sources answered 504 from then on.
 * - The sandbox checks emits and `$.service.db` values with the component's own `JSON`; code that
 *   replaced `JSON.stringify`/`JSON.parse` emitted a BigInt, a cycle or a 4 MB event (over
 *   EVENT_MAX_BYTES), and the runner failed to publish it again and again ("actor job failed"),
 *   a poison invocation that never ended.
 *
 * Now the channel is read as untrusted input (bounded frames, known messages, then the sandbox is
 * stopped) and every run's result is checked again in the app with the app's own JSON.
 */
const PROBE = `const original = { stringify: JSON.stringify, parse: JSON.parse };
module.exports = {
  name: "Probe", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true }, db: "$.service.db" },
  async run(event) {
    // What a probe replaced stays in this worker's realm: each run starts from the real JSON.
    Object.assign(JSON, original);
    const fs = require("fs"), v8 = require("v8");
    const frame = (msg) => { const b = v8.serialize(msg); const h = Buffer.alloc(4); h.writeUInt32BE(b.length); return Buffer.concat([h, b]); };
    const p = event.body.probe;
    // Blocks the thread before the run's first await (its synchronous part).
    if (p === "spin") for (;;) {}
    const fake = (value) => { JSON.stringify = () => "{}"; JSON.parse = () => value; };
    if (p === "giant") {
      this.http.respond({ status: 200, body: "sending" });
      const h = Buffer.alloc(4); h.writeUInt32BE(0xfffffff0);
      fs.writeSync(3, h);
      const chunk = Buffer.alloc(8 << 20, 7);
      for (let i = 0; i < 100; i++) fs.writeSync(3, chunk);
      return;
    }
    // 40 levels each holding the same child twice: a frame of a few hundred bytes, 2^40 leaves to unfold.
    const dag = () => { let x = "y".repeat(64); for (let i = 0; i < 40; i++) x = [x, x]; return x; };
    if (p === "dag-log") {
      this.http.respond({ status: 200, body: "sending" });
      fs.writeSync(3, frame({ t: "log", level: "warn", obj: { dag: dag(), level: "forged" }, msg: "unfolds" }));
      return;
    }
    if (p === "dag-emit") { const d = dag(); fake(d); this.$emit(d); }
    if (p === "logs") {
      const line = frame({ t: "log", level: "error", obj: { forged: "FORGED-LINE" }, msg: "forged" });
      for (let i = 0; i < 500; i++) fs.writeSync(3, line);
    }
    // As many small frames as the runner takes, for 2 s (each is read, checked and dropped): answers how many.
    if (p === "frame-flood") {
      const batch = Buffer.concat(Array.from({ length: 1024 }, () => frame({ t: "log", level: "debug", obj: {}, msg: "x" })));
      const end = Date.now() + 2000;
      let frames = 0;
      while (Date.now() < end) {
        for (let off = 0; off < batch.length; ) { try { off += fs.writeSync(3, batch, off); } catch (e) { if (e.code !== "EAGAIN") throw e; } }
        frames += 1024;
      }
      this.http.respond({ status: 200, body: String(frames) });
      return;
    }
    if (p === "bigint") fake({ big: 1n });
    if (p === "cycle") { const o = {}; o.self = o; fake(o); }
    if (p === "huge") fake({ s: "x".repeat(4 << 20) });
    if (p === "db") { JSON.stringify = () => "1"; JSON.parse = () => 1n; this.db.set("k", 1); }
    if (p === "bigint" || p === "cycle" || p === "huge") this.$emit({ small: true });
    if (p === "fine") this.$emit({ fine: event.body.n });
    // An answer of many small values, sent in pieces; then a frame over the bound of one, forged.
    if (p === "values") for (let i = 0; i < event.body.n; i++) this.$emit({ i, many: Array.from({ length: 30000 }, (_, k) => ({ k })) });
    if (p === "wide-frame") {
      this.http.respond({ status: 200, body: "sending" });
      fs.writeSync(3, frame({ t: "response", id: 2 ** 40, payload: { status: 200, body: "w".repeat(2 << 20) } }));
      return;
    }
    if (p === "deep") { let v = 1; for (let i = 0; i < 3000; i++) v = [v]; this.$emit({ deep: v }); }
    if (p === "stall") {
      // With worker threads, the pool's table of task start times is shared with every worker: "still queued" (0)
      // for every task. Then block the thread.
      const shared = require("worker_threads").workerData?.startTable;
      const table = shared ? new BigInt64Array(shared) : [];
      for (let i = 0; i < table.length; i++) Atomics.store(table, i, 0n);
      this.http.respond({ status: 200, body: "stalling" });
      await new Promise((r) => setTimeout(r, 20));
      for (;;) {}
    }
    if (p === "stall-talking") {
      // Blocks the thread after an await (no vm timeout there), writing a frame the app accepts every 500 ms.
      this.http.respond({ status: 200, body: "stalling" });
      await new Promise((r) => setTimeout(r, 20));
      const line = frame({ t: "log", level: "debug", obj: {}, msg: "still here" });
      for (;;) { const t = Date.now(); while (Date.now() - t < 500) {} fs.writeSync(3, line); }
    }
    if (p === "close-channel") {
      // Closes the process's channel to the app and opens a file in its place: the process's answers go there.
      this.http.respond({ status: 200, body: "closing" });
      await new Promise((r) => setTimeout(r, 200));
      fs.closeSync(3);
      fs.openSync("/tmp/answers", "w");
      return;
    }
    this.http.respond({ status: 200, body: "ok " + p });
  },
};`
const WAITER = `module.exports = { name: "Waiter", version: "1", props: { http: "$.interface.http" }, async run(event) { await new Promise((r) => setTimeout(r, 200)); this.$emit({ waited: event.body.n }); } };`;
const RESPONDER = `module.exports = { name: "R", version: "1", props: { http: { type: "$.interface.http", customResponse: true } }, async run() { this.http.respond({ status: 200, body: "pong" }); } };`;

// Both places runs execute in a sandbox process (SANDBOX_RUN_IN): its own thread (the default), worker threads.
describe.each([
  // 3,000 nested arrays: the process's own thread has a smaller stack than a worker's (1 MB against 4), where the
  // runtime's own JSON check of the emit already overflows; in a worker the serializer of the channel does.
  { runIn: 'process', stopped: 'its sandbox process was stopped', stopLog: 'a run blocked its sandbox process past its deadline', deep: ['TypeError', /^\$emit\(event\): the event or its meta is not JSON-serializable \(Maximum call stack size exceeded\)$/] },
  { runIn: 'workers', stopped: 'its worker was stopped', stopLog: 'sandbox task overran its deadline', deep: ['ResultSizeLimitError', /cannot be sent back: .*call stack/] },
] as const)("the app against what a hostile tenant's sandbox sends back (SANDBOX_RUN_IN=$runIn)", ({ runIn, stopped, stopLog, deep }) => {
  let system: System;
  let a: TestUser;
  let b: TestUser;
  let responder: string;

  const deploy = (user: TestUser, code: string): Promise<{ id: string; url: string }> => deployHttpSource(system, user, code);
  const send = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const ready = (url: string) => eventually(async () => (await send(url, { probe: 'none' })).status === 200, { what: `${url} to answer`, timeoutMs: 30_000 });
  const events = async (id: string, name = '') =>
    (await client(system, a.apiKey).get(`/sources/${id}/event_summaries?expand=event&limit=100${name ? `&event_name=${encodeURIComponent(name)}` : ''}`)).body.data.map((s: { event: unknown }) => s.event);
  const platformUp = async (): Promise<void> => {
    const res = await send(responder, {});
    expect([res.status, await res.text()]).toEqual([200, 'pong']);
    expect((await fetch(`${system.origin}/healthz`)).status).toBe(200);
    for (const [name, proc] of system.procs) expect([name, proc.exitCode, proc.signalCode]).toEqual([name, null, null]);
  };

  beforeAll(async () => {
    system = await startSystem({ SANDBOX_RUN_IN: runIn, HTTP_RATE_PER_SEC: '0', HTTP_RESPONSE_TIMEOUT_MS: '15000', RUN_TIMEOUT_MS: '3000', LOG_LEVEL: 'warn' });
    a = createUser(system);
    b = createUser(system);
    responder = (await deploy(b, RESPONDER)).url;
    await eventually(async () => (await send(responder, {})).status === 200, { what: 'the responder', timeoutMs: 30_000 });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('stops a sandbox that announces a 4 GiB message on its channel; the runner and other accounts go on', async () => {
    const probe = await deploy(a, PROBE);
    await ready(probe.url);
    // Answered 200 when the response overtook the forged header on the channel, else 502 (the source failed first).
    expect([200, 502]).toContain((await send(probe.url, { probe: 'giant' })).status);
    const e = await eventually(async () => (await events(probe.id, '$errors')).find((x: { error?: { name: string } }) => x.error?.name === 'SandboxProtocolError'), { what: 'a SandboxProtocolError', timeoutMs: 30_000 });
    expect(e.error.message).toMatch(/a message of 4294967280 bytes, over the \d+ bytes it may send/);
    await platformUp();
    // The owner's next run gets a new sandbox.
    expect(await (await send(probe.url, { probe: 'fine', n: 1 })).text()).toBe('ok fine');
  });

  it('takes a run result of many small values whole (sent in pieces), and stops a sandbox that writes one frame over 1 MiB', async () => {
    const probe = await deploy(a, PROBE);
    await ready(probe.url);
    expect(await (await send(probe.url, { probe: 'values', n: 6 })).text()).toBe('ok values');
    const got = await eventually(async () => {
      const list = (await events(probe.id)).filter((x: { many?: unknown }) => x.many);
      return list.length === 6 && list;
    }, { what: "the run's 6 events", timeoutMs: 30_000 });
    for (const e of got) expect([e.many.length, e.many[0], e.many[29_999]]).toEqual([30_000, { k: 0 }, { k: 29_999 }]);
    expect(got.map((e: { i: number }) => e.i).sort()).toEqual([0, 1, 2, 3, 4, 5]);

    // 2 MiB in one frame: under the 64 MiB a run's answer may have, over what one frame may (the answer goes in pieces).
    expect([200, 502]).toContain((await send(probe.url, { probe: 'wide-frame' })).status);
    const e = await eventually(async () => (await events(probe.id, '$errors')).find((x: { error?: { name: string } }) => x.error?.name === 'SandboxProtocolError'), { what: 'a SandboxProtocolError', timeoutMs: 30_000 });
    expect(e.error.message).toMatch(/a message of \d+ bytes, over the 1048576 bytes it may send/);
    await platformUp();
  });

  it('stops a sandbox whose options() writes to the channel; the api goes on', async () => {
    const code = `module.exports = { name: "Opts", version: "1", props: { pick: { type: "string", label: "Pick", async options() {
      const fs = require("fs"); const h = Buffer.alloc(4); h.writeUInt32BE(0xfffffff0); fs.writeSync(3, h);
      const chunk = Buffer.alloc(8 << 20, 7); for (let i = 0; i < 100; i++) fs.writeSync(3, chunk);
      await new Promise((r) => setTimeout(r, 5000)); return ["never"];
    } } }, async run() {} };`;
    const saved = await client(system, a.apiKey).post('/components', { component_code: code });
    expect(saved.status).toBe(200);
    const res = await client(system, a.apiKey).post(`/components/${saved.body.data.id}/props/pick/options`, {});
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.text).toMatch(/SandboxProtocolError|broke the protocol/);
    await platformUp();
  });

  it("stops a sandbox whose message unfolds far beyond its frame (shared references); the runner goes on", async () => {
    const probe = await deploy(a, PROBE);
    await ready(probe.url);
    // Once, one such log line or emit held the runner's thread for good (JSON.stringify and the logger walked 2^40
    // leaves), and again after each restart as the invocation came back: every account's runs stopped.
    for (const p of ['dag-log', 'dag-emit']) {
      expect([200, 502]).toContain((await send(probe.url, { probe: p })).status);
      await eventually(async () => (await events(probe.id, '$errors')).filter((x: { error?: { name: string; message: string } }) => x.error?.name === 'SandboxProtocolError' && /unfolds to more than \d+ values and characters \(shared references\)/.test(x.error.message)).length === (p === 'dag-log' ? 1 : 2), { what: `a SandboxProtocolError for ${p}`, timeoutMs: 30_000 });
      await platformUp();
    }
    expect(system.logs('runner')).not.toContain('unfolds"');
    expect(await (await send(probe.url, { probe: 'fine', n: 8 })).text()).toBe('ok fine');
  });

  it("stops a sandbox whose component's top level sends such a message while the api reads it; the api goes on", async () => {
    const code = `const fs = require("fs"), v8 = require("v8");
      let x = "y".repeat(64); for (let i = 0; i < 40; i++) x = [x, x];
      const b = v8.serialize({ t: "log", level: "warn", obj: { dag: x }, msg: "unfolds" }); const h = Buffer.alloc(4); h.writeUInt32BE(b.length);
      fs.writeSync(3, Buffer.concat([h, b]));
      module.exports = { name: "Unfolds", version: "1", props: {}, async run() {} };`;
    const saved = await client(system, a.apiKey).post('/components', { component_code: code });
    expect(saved.status).toBeGreaterThanOrEqual(400);
    expect(saved.status).toBeLessThan(500);
    expect(saved.text).toMatch(/unfolds to more than/);
    await platformUp();
  });

  it('drops log lines a sandbox forges past its budget', async () => {
    const probe = await deploy(a, PROBE);
    await ready(probe.url);
    await send(probe.url, { probe: 'logs' });
    await new Promise((r) => setTimeout(r, 2000));
    const forged = system.logs('runner').split('FORGED-LINE').length - 1;
    expect(forged).toBeGreaterThan(0);
    expect(forged).toBeLessThanOrEqual(100);
    await platformUp();
  });

  it("reads at most 10,000 frames a second of one sandbox: a flood of small ones waits in the sandbox", async () => {
    // 200,000 frames a second of 30 bytes each once had the runner read, check and drop every one: another account's
    // source answered a sixth as many requests meanwhile.
    const probe = await deploy(a, PROBE);
    await ready(probe.url);
    const res = await send(probe.url, { probe: 'frame-flood' });
    expect(res.status).toBe(200);
    // 10,000 at once, then 10,000 a second, and what the socket between them holds.
    expect(Number(await res.text())).toBeLessThan(60_000);
    await platformUp();
  });

  it('fails a result nested too deeply to send back, without ending the sandbox', async () => {
    const probe = await deploy(a, PROBE);
    await ready(probe.url);
    // Once, 3,000 levels passed the sandbox's JSON but not the serializer of the channel: it threw in the host, which died.
    expect(await (await send(probe.url, { probe: 'deep' })).text()).toBe('ok deep');
    const e = await eventually(async () => (await events(probe.id, '$errors')).find((x: { error?: { name: string } }) => x.error?.name), { what: 'a $errors event', timeoutMs: 30_000 });
    expect([e.error.name, e.error.message]).toEqual([deep[0], expect.stringMatching(deep[1])]);
    expect(await (await send(probe.url, { probe: 'fine', n: 3 })).text()).toBe('ok fine');
    await platformUp();
  });

  it("times a blocked run out (with worker threads, though it rewrote the pool's shared table of start times)", async () => {
    const probe = await deploy(a, PROBE);
    await ready(probe.url);
    const started = Date.now();
    expect(await (await send(probe.url, { probe: 'stall' })).text()).toBe('stalling');
    // Before: no TimeoutError ever came, and the source answered 504 from then on (its worker held for good).
    const e = await eventually(async () => (await events(probe.id, '$errors')).find((x: { error?: { name: string } }) => x.error?.name === 'TimeoutError'), { what: 'a TimeoutError', timeoutMs: 30_000 });
    expect(e.error.message).toBe(`run timed out after 3000 ms (${stopped})`);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(await (await send(probe.url, { probe: 'fine', n: 2 })).text()).toBe('ok fine');
    await platformUp();
  });

  it('times a blocked run out though it keeps writing frames to the channel', async () => {
    // Any bytes from the process once counted as an answer: a run that blocked its thread and wrote a log frame every
    // 500 ms was never timed out, and held its sandbox process (and a core) for good.
    const probe = await deploy(a, PROBE.replace('name: "Probe"', 'name: "Talker"'));
    await ready(probe.url);
    const started = Date.now();
    expect(await (await send(probe.url, { probe: 'stall-talking' })).text()).toBe('stalling');
    const e = await eventually(async () => (await events(probe.id, '$errors')).find((x: { error?: { name: string } }) => x.error?.name === 'TimeoutError'), { what: 'a TimeoutError', timeoutMs: 30_000 });
    expect(e.error.message).toBe(`run timed out after 3000 ms (${stopped})`);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(await (await send(probe.url, { probe: 'fine', n: 6 })).text()).toBe('ok fine');
    await platformUp();
  });

  it("runs again another source's run of the account that was in flight when a blocked run was stopped", async () => {
    const staller = await deploy(a, PROBE.replace('name: "Probe"', 'name: "Staller"'));
    const waiter = await deploy(a, WAITER);
    await ready(staller.url);
    await ready(waiter.url);
    expect(await (await send(staller.url, { probe: 'stall' })).text()).toBe('stalling');
    // Reaches the sandbox while the staller holds its thread (with SANDBOX_RUN_IN=process, the one thread).
    expect((await send(waiter.url, { n: 1 })).status).toBe(200);
    await eventually(async () => (await events(staller.id, '$errors')).some((x: { error?: { name: string } }) => x.error?.name === 'TimeoutError'), { what: "the staller's TimeoutError", timeoutMs: 30_000 });
    // Before, the waiter's run failed with the staller's (a SandboxCrashError) and its event was never emitted.
    await eventually(async () => (await events(waiter.id)).some((x: { waited?: number }) => x.waited === 1), { what: "the waiter's event", timeoutMs: 30_000 });
    expect(await events(waiter.id, '$errors')).toEqual([]);
    await platformUp();
  });

  it('stops code that blocked its thread once; then it runs guarded: the next block ends the run alone', async () => {
    // Code of its own: the stall above made the probe's code guarded.
    const probe = await deploy(a, PROBE.replace('name: "Probe"', 'name: "Spinner"'));
    await ready(probe.url);
    const stops = () => system.logs('runner').split(stopLog).length - 1;
    const before = stops();
    const timeouts = async () => (await events(probe.id, '$errors')).filter((x: { error?: { name: string } }) => x.error?.name === 'TimeoutError');
    // Each run answers 502 when it fails before responding (the first: its process or worker was stopped).
    expect((await send(probe.url, { probe: 'spin' })).status).toBe(502);
    await eventually(async () => (await timeouts()).length === 1, { what: 'the first TimeoutError', timeoutMs: 30_000 });
    expect((await timeouts())[0].error.message).toBe(`run timed out after 3000 ms (${stopped})`);
    expect(await (await send(probe.url, { probe: 'fine', n: 4 })).text()).toBe('ok fine');
    expect((await send(probe.url, { probe: 'spin' })).status).toBe(502);
    await eventually(async () => (await timeouts()).length === 2, { what: 'the second TimeoutError', timeoutMs: 30_000 });
    // The vm timeout ended the second: nothing was stopped for it.
    expect((await timeouts()).map((x: { error: { message: string } }) => x.error.message).sort()).toEqual(['run timed out after 3000 ms', `run timed out after 3000 ms (${stopped})`]);
    expect(stops() - before).toBe(1);
    expect(await (await send(probe.url, { probe: 'fine', n: 5 })).text()).toBe('ok fine');
    await platformUp();
  });

  it('stops a sandbox that closes its channel to the app; the account\'s next run gets a new one', async () => {
    // With worker threads the app keeps no deadline of its own: the account's runs waited for good on a process whose
    // answers went into a file, until an access change, a deletion or a runner restart.
    const probe = await deploy(a, PROBE.replace('name: "Probe"', 'name: "Closer"'));
    await ready(probe.url);
    expect(await (await send(probe.url, { probe: 'close-channel' })).text()).toBe('closing');
    expect(await (await send(probe.url, { probe: 'fine', n: 8 })).text()).toBe('ok fine');
    await eventually(async () => (await events(probe.id)).some((x: { fine?: number }) => x.fine === 8), { what: 'the next event', timeoutMs: 30_000 });
    await platformUp();
  });

  it("checks emits and db values again with the app's own JSON: no poison invocation", async () => {
    const probe = await deploy(a, PROBE);
    await ready(probe.url);
    const expected: [string, string, RegExp][] = [
      ['bigint', 'TypeError', /not JSON-serializable.*BigInt/],
      // A cycle unfolds without end: refused as it is read, before any JSON (the sandbox is stopped).
      ['cycle', 'SandboxProtocolError', /unfolds to more than \d+ values and characters \(shared references\)/],
      ['huge', 'EventSizeLimitError', /event too large: \d+ bytes with its meta, the limit is \d+ bytes/],
      ['db', 'TypeError', /\$\.service\.db: a value set is not JSON-serializable/],
    ];
    for (const [probeName] of expected) expect(await (await send(probe.url, { probe: probeName })).text()).toBe(`ok ${probeName}`);
    const errors = await eventually(async () => {
      const list = (await events(probe.id, '$errors')) as { error: { name: string; message: string } }[];
      return list.length >= expected.length ? list : undefined;
    }, { what: 'one $errors event per probe', timeoutMs: 30_000 });
    for (const [, name, message] of expected) expect(errors).toContainEqual(expect.objectContaining({ error: expect.objectContaining({ name, message: expect.stringMatching(message) }) }));
    // The source goes on: its next events are published, and no job of the runner failed over and over.
    expect(await (await send(probe.url, { probe: 'fine', n: 7 })).text()).toBe('ok fine');
    await eventually(async () => (await events(probe.id)).some((x: { fine?: number }) => x.fine === 7), { what: 'the next event', timeoutMs: 30_000 });
    expect(system.logs('runner')).not.toContain('actor job failed');
    await platformUp();
  });
});
