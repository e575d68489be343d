import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxPool } from '../pool';
import type { ExecuteTask } from '../types';
import { isolationSettings } from '../test-support/isolation';
import { setUpIsolation } from './setup';

/**
 * Accounts each within SANDBOX_MEMORY_MB can together take the machine's memory: their sandbox processes together are
 * bounded by SANDBOX_MEMORY_TOTAL_MB (the largest stopped), and the kernel's OOM killer takes a sandbox first.
 */
describe('the memory of every sandbox process together', () => {
  let pool: SandboxPool;
  let cache: string;

  beforeAll(async () => {
    cache = mkdtempSync(join(tmpdir(), 'ess-iso-total-'));
    const isolation = await setUpIsolation(isolationSettings(cache, { sandboxMemoryMb: 512, sandboxMemoryTotalMb: 320, sandboxTmpMb: 256, sandboxIdleMs: 60_000 }));
    expect(isolation.mode).toBe('namespaces');
    pool = new SandboxPool({ threads: 1, heapMb: 64, vmTimeout: 'adaptive', npmCacheDir: join(cache, 'npm'), isolation: isolation.options });
  });
  afterAll(async () => {
    await pool?.close();
    rmSync(cache, { recursive: true, force: true });
  });

  /** A run that holds `mib` MiB of off-heap memory for `holdMs`, then emits how much it held. */
  const hold = (account: string, mib: number, holdMs: number) => {
    const code = `module.exports = { name: "h", version: "1", async run() { const b = Buffer.alloc(${mib} << 20, 1); await new Promise((r) => setTimeout(r, ${holdMs})); this.$emit(b.length >> 20); } };`;
    const task: ExecuteTask = { kind: 'execute', account, sourceId: 'dc_t', invocationId: `i${Math.random()}`, codeHash: code, code, method: 'run', props: {}, db: {}, event: {}, timeoutMs: 30_000, limits: { dbMaxBytes: 1e6, eventMaxBytes: 1e6, emitsPerInvocation: 10 } };
    return pool.execute(task);
  };

  it('stops the largest sandbox process when they pass SANDBOX_MEMORY_TOTAL_MB together; the others go on', async () => {
    const small = hold('u_small', 100, 6_000);
    await new Promise((r) => setTimeout(r, 1_500)); // the small one holds its memory first
    const large = await hold('u_large', 200, 6_000); // each within its 512 MiB; together past 320
    expect(large.error).toMatchObject({ name: 'MemoryLimitError', message: expect.stringContaining('(SANDBOX_MEMORY_TOTAL_MB); this account\'s, the largest at') });
    expect(large.emits).toEqual([]);
    const out = await small;
    expect(out.error).toBeUndefined();
    expect(out.emits.map((e) => e.event)).toEqual([100]);
  });

  it("counts each sandbox's /tmp, a tmpfs: memory that no process's resident memory shows", async () => {
    const code = `module.exports = { name: "t", version: "1", async run() { const fs = require("fs"); for (let i = 0; i < 18; i++) fs.writeFileSync("/tmp/f" + i, Buffer.alloc(10 << 20, 1)); await new Promise((r) => setTimeout(r, 6000)); this.$emit("kept"); } };`;
    const task: ExecuteTask = { kind: 'execute', account: 'u_tmp', sourceId: 'dc_t', invocationId: 'i_tmp', codeHash: code, code, method: 'run', props: {}, db: {}, event: {}, timeoutMs: 30_000, limits: { dbMaxBytes: 1e6, eventMaxBytes: 1e6, emitsPerInvocation: 10 } };
    const files = pool.execute(task); // 180 MiB in /tmp, a few dozen resident
    await new Promise((r) => setTimeout(r, 1_500));
    const memory = await hold('u_memory', 100, 3_000); // about 150 MiB resident: together with /tmp past 320
    const tmp = await files;
    expect(tmp.error).toMatchObject({ name: 'MemoryLimitError', message: expect.stringContaining('SANDBOX_MEMORY_TOTAL_MB') });
    expect(memory.error).toBeUndefined();
    expect(memory.emits.map((e) => e.event)).toEqual([100]);
  });

  it('runs the sandbox processes as the OOM killer\'s first choice (oom_score_adj 1000)', async () => {
    const running = hold('u_score', 1, 3_000);
    await new Promise((r) => setTimeout(r, 1_000));
    // The node processes under this pool's bubblewraps (their command lines name its socket directory, ess-sbx-<pid>-).
    const read = (file: string): string => {
      try {
        return readFileSync(file, 'utf8');
      } catch {
        return '';
      }
    };
    const pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
    const todo = pids.filter((p) => read(`/proc/${p}/cmdline`).includes(`ess-sbx-${process.pid}-`));
    const hosts: string[] = [];
    while (todo.length) {
      const p = todo.pop()!;
      if (read(`/proc/${p}/cmdline`).split('\0')[0].endsWith('/node')) hosts.push(p);
      todo.push(...read(`/proc/${p}/task/${p}/children`).trim().split(/\s+/).filter(Boolean));
    }
    expect(hosts.length).toBeGreaterThan(0);
    for (const p of hosts) expect(readFileSync(`/proc/${p}/oom_score_adj`, 'utf8').trim()).toBe('1000');
    expect((await running).error).toBeUndefined();
  });
});
