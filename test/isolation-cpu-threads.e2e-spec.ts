import { readdirSync, readFileSync } from 'node:fs';
import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * CPU work a run hands to threads other than its own. Async crypto runs on libuv's thread pool (four threads by
 * default): one run queued pbkdf2 jobs and returned at once, the run timeout saw nothing (the process's own thread
 * was free), and four cores went on working for the tenant after the run had ended, against every other account's
 * sandboxes and the apps themselves. Now a sandbox has one such thread.
 */
const QUEUER = `module.exports = { name: "Queuer", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run() {
    const crypto = require("crypto");
    for (let i = 0; i < 32; i++) crypto.pbkdf2("x", "y", 3000000, 64, "sha512", () => {});
    this.http.respond({ status: 200, body: "queued" });
  } };`;

const children = (pid: number): number[] => {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
};

/** The sandbox host processes under an app process (bubblewrap, then node running host-main.js). */
function sandboxHosts(appPid: number): number[] {
  const out: number[] = [];
  const todo = [appPid];
  while (todo.length) {
    const pid = todo.pop()!;
    for (const c of children(pid)) {
      const cmd = readFileSync(`/proc/${c}/cmdline`, 'utf8');
      if (cmd.includes('host-main.js') && !cmd.includes('bwrap')) out.push(c);
      else todo.push(c);
    }
  }
  return out;
}

/** CPU time (clock ticks) of each thread of a process. */
function threadTicks(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const fields = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ');
      out.set(tid, Number(fields[11]) + Number(fields[12]));
    } catch {
      // the thread ended
    }
  }
  return out;
}

/** Reports its sandbox's scheduling priority, after trying to raise it to the apps' own. */
const PRIORITY = `module.exports = { name: "Priority", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run() {
    const os = require("os");
    let raised;
    try { os.setPriority(0); raised = "raised"; } catch (e) { raised = e.code || e.message; }
    this.http.respond({ status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ priority: os.getPriority(), raised }) });
  } };`;

describe('CPU work a run leaves to other threads of its sandbox', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0' }, { apps: ['api', 'runner'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('keeps one thread of work beside the sandbox\'s own thread, after the run ended', async () => {
    const api = client(system, createUser(system).apiKey);
    const res = await api.post('/sources', { component_code: QUEUER });
    expect(res.status).toBe(200);
    const url = res.body.data.configured_props.http.endpoint_url as string;
    const answer = await eventually(async () => {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      return r.status === 200 ? r.text() : undefined;
    }, { what: 'the queuer to answer', timeoutMs: 30_000 });
    expect(answer).toBe('queued');

    const [host] = sandboxHosts(system.procs.get('runner')!.pid!);
    expect(host).toBeGreaterThan(0);
    const before = threadTicks(host);
    await new Promise((r) => setTimeout(r, 3000));
    const after = threadTicks(host);
    // Threads that worked at least 0.3 s of the 3 s: before, the four of libuv's pool (a machine's two cores
    // shared between them); now the one.
    const busy = [...after].filter(([tid, ticks]) => ticks - (before.get(tid) ?? 0) >= 30).map(([tid]) => tid);
    expect(busy.length).toBe(1);
  });

  // A busy tenant competed with the api, the runner, NATS and Postgres at their own priority.
  it('runs component code below the platform\'s priority (SANDBOX_NICE), which it cannot raise back', async () => {
    const api = client(system, createUser(system).apiKey);
    const res = await api.post('/sources', { component_code: PRIORITY });
    expect(res.status).toBe(200);
    const url = res.body.data.configured_props.http.endpoint_url as string;
    const report = await eventually(async () => {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      return r.status === 200 ? ((await r.json()) as { priority: number; raised: string }) : undefined;
    }, { what: 'the priority probe to answer', timeoutMs: 30_000 });
    expect(report.priority).toBe(10);
    expect(report.raised).not.toBe('raised');
  });
});
