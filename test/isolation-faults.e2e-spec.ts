import { client, createUser, TestUser } from './support/accounts';
import { eventually, freePort, startSystem, System } from './support/system';
import { deployHttpSource } from './support/http-sources';

/** An HTTP source whose run does what the request body says: a fault of its own sandbox, or nothing. */
const FAULTY_SOURCE = `module.exports = {
  name: "Faulty", version: "1",
  props: { http: "$.interface.http" },
  async run(event) {
    const what = event.body && event.body.fault;
    if (what === "kill") process.kill(process.pid);
    if (what === "buffers") { const keep = []; for (;;) keep.push(Buffer.alloc(16 * 1024 * 1024, 1)); }
    if (what === "fork") require("child_process").fork("/bin/true");
    if (what === "hang") await new Promise(() => {});
    // Empty files take no room in the tmpfs (SANDBOX_TMP_MB) but about 800 bytes of kernel memory each.
    if (what === "files") { const fs = require("fs"); fs.mkdirSync("/tmp/f", { recursive: true }); for (let i = 0; i < 3e6; i++) fs.writeFileSync("/tmp/f/" + i, ""); }
    this.$emit({ fine: true });
  },
};`;

/** Answers its HTTP request itself: a 504 would mean it could not run in time. */
const RESPONDER = `module.exports = {
  name: "Responder", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) { this.http.respond({ status: 200, body: "pong" }); },
};`;

/**
 * Faults stay with their owner: a sandbox killed, out of memory, forking or
 * stuck ends (or holds) only its own account's sandbox; the owner gets a
 * $errors event saying what happened; the apps and other accounts go on.
 */
describe('faults in one account\'s sandbox', () => {
  let system: System;
  let a: TestUser;
  let b: TestUser;
  let faulty: { id: string; url: string };
  let responder: { id: string; url: string };
  const ports: Record<string, string> = {};

  const deploy = (user: TestUser, code: string): Promise<{ id: string; url: string }> => deployHttpSource(system, user, code);
  const send = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const errorsOf = async (id: string): Promise<{ error: { name: string; message: string } }[]> =>
    (await client(system, a.apiKey).get(`/sources/${id}/event_summaries?event_name=$errors&expand=event&limit=100`)).body.data.map((s: { event: unknown }) => s.event);
  const errorNamed = (id: string, name: string) =>
    eventually(async () => (await errorsOf(id)).find((e) => e.error?.name === name), { what: `a ${name} $errors event`, timeoutMs: 30_000 });
  const pong = async (): Promise<void> => {
    const res = await send(responder.url, {});
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('pong');
  };
  const appsUp = async (): Promise<void> => {
    for (const url of [`${system.origin}/healthz`, `http://127.0.0.1:${ports.runner}/healthz`, `http://127.0.0.1:${ports.delivery}/healthz`]) expect((await fetch(url)).status).toBe(200);
    for (const [name, proc] of system.procs) expect([name, proc.exitCode, proc.signalCode]).toEqual([name, null, null]);
  };

  beforeAll(async () => {
    ports.runner = String(await freePort());
    ports.delivery = String(await freePort());
    system = await startSystem({
      SANDBOX_MEMORY_MB: '320',
      RUN_TIMEOUT_MS: '60000',
      HTTP_RATE_PER_SEC: '0',
      HTTP_RESPONSE_TIMEOUT_MS: '8000',
      RUNNER_METRICS_PORT: ports.runner,
      DELIVERY_METRICS_PORT: ports.delivery,
    });
    a = createUser(system);
    b = createUser(system);
    faulty = await deploy(a, FAULTY_SOURCE);
    responder = await deploy(b, RESPONDER);
    await eventually(async () => (await send(responder.url, {})).status === 200, { what: 'the responder', timeoutMs: 30_000 });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('process.kill(process.pid) ends only the owner\'s sandbox, with a $errors event', async () => {
    expect((await send(faulty.url, { fault: 'kill' })).status).toBe(200);
    const e = await errorNamed(faulty.id, 'SandboxCrashError');
    expect(e.error.message).toMatch(/killed \(SIGTERM\)/);
    await pong();
    await appsUp();
    // The owner's next run gets a new sandbox.
    expect((await send(faulty.url, {})).status).toBe(200);
    await eventually(async () => (await client(system, a.apiKey).get(`/sources/${faulty.id}/event_summaries?expand=event`)).body.data.some((s: { event: { fine?: boolean } }) => s.event?.fine), { what: 'a run after the crash', timeoutMs: 30_000 });
  });

  it('an off-heap memory bomb is stopped at the account\'s memory limit, naming it', async () => {
    expect((await send(faulty.url, { fault: 'buffers' })).status).toBe(200);
    const e = await errorNamed(faulty.id, 'MemoryLimitError');
    expect(e.error.message).toMatch(/memory limit of 320 MiB \(SANDBOX_MEMORY_MB\)/);
    await pong();
    await appsUp();
  });

  it("empty files in /tmp count against the account's memory limit", async () => {
    // 3 million of them, the tmpfs's default count of inodes, held 2.4 GiB of the kernel's memory that neither the
    // tmpfs's size nor any process's resident memory showed, past SANDBOX_MEMORY_MB and SANDBOX_MEMORY_TOTAL_MB.
    const filer = await deploy(a, FAULTY_SOURCE);
    expect((await send(filer.url, { fault: 'files' })).status).toBe(200);
    const e = await errorNamed(filer.id, 'MemoryLimitError');
    expect(e.error.message).toMatch(/files in its \/tmp.* over its memory limit of 320 MiB \(SANDBOX_MEMORY_MB\)/);
    await pong();
    await appsUp();
  });

  it('a fork attempt is refused', async () => {
    expect((await send(faulty.url, { fault: 'fork' })).status).toBe(200);
    await eventually(async () => (await errorsOf(faulty.id)).find((e) => /ERR_ACCESS_DENIED|restricted/.test(`${e.error?.name} ${e.error?.message}`)), { what: 'the refused fork', timeoutMs: 30_000 });
  });

  it('runs that never end hold only their own account: another account\'s source still answers', async () => {
    const second = await deploy(a, FAULTY_SOURCE);
    for (let i = 0; i < 3; i++) {
      expect((await send(faulty.url, { fault: 'hang' })).status).toBe(200);
      expect((await send(second.url, { fault: 'hang' })).status).toBe(200);
    }
    // Both of A's sandbox threads are stuck; B answers from its own sandbox (a 504 would mean it waited on A).
    for (let i = 0; i < 5; i++) await pong();
    await appsUp();
  });
});
