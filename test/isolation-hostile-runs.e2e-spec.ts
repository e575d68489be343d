import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';
import { deployHttpSource } from './support/http-sources';

/**
 * A hostile tenant's run against the sandbox's own machinery, on both places runs execute (SANDBOX_RUN_IN): what
 * the other isolation tests do not try. Each probe is one request to account A's source; after each, account B's
 * source still answers and its events are indexed, every app is up, and A's own next run works.
 *
 * - a thread parked in `Atomics.wait` (which no `vm` timeout interrupts: the process, or the worker, is stopped);
 * - throws of values the runtime must describe without trusting them: a Proxy whose every trap throws, a revoked
 *   Proxy, an object whose `name`, `message` and `stack` getters throw, a Symbol, `null`, and an
 *   `Error.prepareStackTrace` that throws (the runtime's own errors are built through it);
 * - ways out through the realm: `vm`'s `this.constructor.constructor("return process")`, `module.createRequire`,
 *   `process.binding`, `process.dlopen`, `v8.setFlagsFromString` (`--allow-natives-syntax`: V8's test intrinsics),
 *   `process.reallyExit`, `process.abort`;
 * - `respond()` with an informational status, with 204 and 304 and a body, twice, and with headers a Proxy hides;
 * - a timer that outlives its run and emits, and a pending `Promise` it resolves later.
 */
const PROBE = `module.exports = {
  name: "Probe", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    // What a probe left in the realm stays with the account: each run starts from the runtime's own hooks.
    Error.prepareStackTrace = undefined;
    const p = event.body.probe;
    const respond = (status, body) => this.http.respond({ status, body });
    if (p === "wait") Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    if (p === "wait-after-await") { await null; Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); }
    if (p === "throw-proxy") { const t = () => { throw new Error("trap"); }; throw new Proxy({}, { get: t, has: t, ownKeys: t, getPrototypeOf: t, getOwnPropertyDescriptor: t }); }
    if (p === "throw-revoked") { const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); throw proxy; }
    if (p === "throw-getters") throw { get name() { throw 1; }, get message() { throw new Error("no message"); }, get stack() { throw 2; } };
    if (p === "throw-symbol") throw Symbol("s");
    if (p === "throw-null") throw null;
    if (p === "prepare-stack") { Error.prepareStackTrace = () => { throw new Error("prepareStackTrace"); }; throw new Error("boom"); }
    if (p === "ways-out") {
      const out = {};
      const t = (k, f) => { try { const v = f(); out[k] = v && typeof v === "object" ? "OK " + Object.keys(v).join(",") : "OK " + String(v); } catch (e) { out[k] = "DENIED " + (e.code || e.message); } };
      t("vmProcessEnv", () => require("vm").runInNewContext("this.constructor.constructor('return process')().env"));
      t("createRequire", () => require("module").createRequire("/app/")("child_process").execSync("id"));
      t("binding", () => process.binding("spawn_sync"));
      t("dlopen", () => process.dlopen({ exports: {} }, "/tmp/x.node"));
      t("internalBinding", () => typeof internalBinding === "undefined" ? (() => { throw new Error("undefined"); })() : "defined");
      t("v8Flags", () => require("v8").setFlagsFromString("--allow-natives-syntax"));
      t("natives", () => new Function("return %IsBeingInterpreted()")());
      return respond(200, JSON.stringify(out));
    }
    if (p === "really-exit") process.reallyExit(1);
    if (p === "abort") process.abort();
    if (p === "status-101") return this.http.respond({ status: 101, headers: { upgrade: "websocket", connection: "upgrade" } });
    if (p === "status-204") return respond(204, "a body a 204 cannot have");
    if (p === "status-304") return respond(304, "a body a 304 cannot have");
    if (p === "twice") { respond(200, "first"); respond(500, "second"); }
    if (p === "proxy-headers") return this.http.respond({ status: 200, headers: new Proxy({}, { ownKeys() { for (;;) {} } }), body: "x" });
    if (p === "later") {
      // Neither is caught: the throws of $emit after the run are the stray code's own uncaught errors.
      const emit = this.$emit.bind(this);
      setTimeout(() => emit({ late: "timer" }), 300);
      new Promise((r) => setTimeout(r, 300)).then(() => emit({ late: "promise" }));
      return respond(200, "left a timer");
    }
    this.$emit({ fine: event.body.n ?? 0 });
    respond(200, "ok " + p);
  },
};`;

const VICTIM = `module.exports = {
  name: "Victim", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) { this.$emit({ n: event.body.n }); this.http.respond({ status: 200, body: "victim " + event.body.n }); },
};`;

describe.each([
  { runIn: 'process', stopped: 'its sandbox process was stopped' },
  { runIn: 'workers', stopped: 'its worker was stopped' },
] as const)("a hostile tenant's run against the sandbox's own machinery (SANDBOX_RUN_IN=$runIn)", ({ runIn, stopped }) => {
  let system: System;
  let a: TestUser;
  let b: TestUser;
  let probe: { id: string; url: string };
  let victim: { id: string; url: string };
  let n = 0;

  const deploy = (user: TestUser, code: string): Promise<{ id: string; url: string }> => deployHttpSource(system, user, code);
  const send = async (url: string, body: unknown): Promise<{ status: number; text: string; headers: Headers }> => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, text: await res.text(), headers: res.headers };
  };
  const eventsOf = async (user: TestUser, id: string, name = ''): Promise<Record<string, any>[]> => // eslint-disable-line @typescript-eslint/no-explicit-any
    (await client(system, user.apiKey).get(`/sources/${id}/event_summaries?expand=event&limit=100${name ? `&event_name=${encodeURIComponent(name)}` : ''}`)).body.data.map((s: { event: unknown }) => s.event);
  /** The $errors event of A's probe whose message matches, once indexed. */
  const probeError = (match: (e: { name: string; message: string }) => boolean, what: string) =>
    eventually(async () => (await eventsOf(a, probe.id, '$errors')).map((e) => e.error).find((e) => e && match(e)), { what, timeoutMs: 30_000 });
  /** B's source answers and its event is indexed; every app is up; A's own next run works. */
  const othersGoOn = async (): Promise<void> => {
    const mine = ++n;
    const res = await send(victim.url, { n: mine });
    expect([res.status, res.text]).toEqual([200, `victim ${mine}`]);
    await eventually(async () => (await eventsOf(b, victim.id)).some((e) => e.n === mine), { what: `B's event ${mine}`, timeoutMs: 30_000 });
    expect((await fetch(`${system.origin}/healthz`)).status).toBe(200);
    for (const [name, proc] of system.procs) expect([name, proc.exitCode, proc.signalCode]).toEqual([name, null, null]);
    const own = await eventually(async () => {
      const r = await send(probe.url, { probe: 'none' });
      return r.status === 200 ? r : undefined;
    }, { what: "A's next run", timeoutMs: 30_000 });
    expect(own.text).toBe('ok none');
  };

  beforeAll(async () => {
    system = await startSystem({ SANDBOX_RUN_IN: runIn, RUN_TIMEOUT_MS: '3000', HTTP_RATE_PER_SEC: '0', HTTP_RESPONSE_TIMEOUT_MS: '20000' });
    a = createUser(system);
    b = createUser(system);
    probe = await deploy(a, PROBE);
    victim = await deploy(b, VICTIM);
    for (const url of [probe.url, victim.url]) await eventually(async () => (await send(url, { probe: 'none', n: 0 })).status === 200, { what: `${url} to answer`, timeoutMs: 30_000 });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('stops a thread parked in Atomics.wait (before and after an await) at its deadline', async () => {
    for (const p of ['wait', 'wait-after-await']) {
      const res = await send(probe.url, { probe: p });
      expect([p, res.status, JSON.parse(res.text).error]).toEqual([p, 502, expect.stringMatching(/run timed out after 3000 ms/)]);
      await othersGoOn();
    }
    await probeError((e) => e.name === 'TimeoutError' && e.message.includes(stopped), 'a TimeoutError');
  });

  it('turns a throw of a hostile value into a $errors event of its own, whatever its getters and traps do', async () => {
    for (const p of ['throw-proxy', 'throw-revoked', 'throw-getters', 'throw-symbol', 'throw-null', 'prepare-stack']) {
      const res = await send(probe.url, { probe: p });
      expect([p, res.status, JSON.parse(res.text).code]).toEqual([p, 502, 'source_error']);
      await othersGoOn();
    }
    const errors = (await eventsOf(a, probe.id, '$errors')).map((e) => e.error);
    for (const e of errors) expect([typeof e.name, typeof e.message]).toEqual(['string', 'string']);
    expect(errors.map((e) => e.message)).toEqual(expect.arrayContaining(['Symbol(s)', 'null', expect.stringContaining("proxy that has been revoked")]));
  });

  it('refuses the ways out through the realm; reallyExit and abort end only the account\'s own sandbox', async () => {
    const res = await send(probe.url, { probe: 'ways-out' });
    expect(res.status).toBe(200);
    const out = JSON.parse(res.text) as Record<string, string>;
    // vm's context reaches the sandbox's process object, whose environment holds only the source's id (PD_COMPONENT).
    expect(out.vmProcessEnv).toBe('OK PD_COMPONENT');
    for (const k of ['createRequire', 'binding', 'dlopen', 'internalBinding', 'v8Flags']) expect([k, out[k]]).toEqual([k, expect.stringMatching(/^DENIED/)]);
    // V8's test intrinsics (%…), not memory-safe, stay out of reach: a flag set from a run once enabled them.
    expect(out.natives).toMatch(/^DENIED .*Unexpected token '%'/);
    for (const p of ['really-exit', 'abort']) {
      expect([p, (await send(probe.url, { probe: p })).status]).toEqual([p, 502]);
      await othersGoOn();
    }
  });

  it("relays respond() only as HTTP allows: no informational final answer, no body on 204 and 304, the first of two", async () => {
    const informational = await send(probe.url, { probe: 'status-101' });
    expect([informational.status, JSON.parse(informational.text).code]).toEqual([502, 'bad_gateway']);
    for (const status of [204, 304]) {
      const res = await send(probe.url, { probe: `status-${status}` });
      expect([res.status, res.text]).toEqual([status, '']);
    }
    const twice = await send(probe.url, { probe: 'twice' });
    expect([twice.status, twice.text]).toEqual([200, 'first']);
    await probeError((e) => /respond\(\) was already called/.test(e.message), 'the second respond() as an error');
    const hidden = await send(probe.url, { probe: 'proxy-headers' });
    expect([hidden.status, JSON.parse(hidden.text).error]).toEqual([502, expect.stringMatching(/run timed out after 3000 ms/)]);
    await othersGoOn();
  });

  it('refuses emits from a timer or a promise that outlive their run', async () => {
    expect((await send(probe.url, { probe: 'later' })).text).toBe('left a timer');
    await new Promise((r) => setTimeout(r, 1000));
    await othersGoOn();
    // The next run's event is indexed, and neither late emit is among the source's events.
    await eventually(async () => (await eventsOf(a, probe.id)).some((e) => e.fine === 0), { what: "A's next event", timeoutMs: 30_000 });
    expect((await eventsOf(a, probe.id)).filter((e) => e.late)).toEqual([]);
  });
});
