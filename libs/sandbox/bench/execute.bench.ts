/**
 * Sandbox throughput: trivial invocations per second through one SandboxPool,
 * in-process (SANDBOX_ISOLATION=none) and in an account's sandbox process
 * (namespaces), run alternately; then the cost of an extra account (start-up
 * time of its sandbox, resident memory of an idle one).
 *   npm run build && node dist/libs/sandbox/bench/execute.bench.js [--threads 2] [--seconds 5] [--inflight 64] [--accounts 10]
 * Prints one line per scenario (and a JSON line with every figure at the end).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setUpIsolation } from '../src/isolation/setup';
import { isolationSettings } from '../src/test-support/isolation';
import { treeRssBytes } from '../src/isolation/process-memory';
import { SandboxPool } from '../src/pool';
import type { ExecuteTask } from '../src/types';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}

const SCENARIOS: Record<string, { code: string; props?: Record<string, unknown>; db?: Record<string, unknown> }> = {
  'emit the event': { code: `module.exports = { name: 'b', version: '1', run(e) { this.$emit(e, { id: e.n }) } }` },
  'db get/set + methods + emit': {
    code: `module.exports = { name: 'b', version: '1', props: { db: '$.service.db', label: { type: 'string' } },
      methods: { next() { const n = (this.db.get('n') ?? 0) + 1; this.db.set('n', n); return n } },
      async run(e) { const { next } = this; this.$emit({ ...e, label: this.label, n: next() }, { id: e.n, ts: Date.now() }) } }`,
    props: { label: 'x' },
    db: { n: 1 },
  },
};

function task(name: string, account = 'u_bench'): ExecuteTask {
  const s = SCENARIOS[name];
  return {
    kind: 'execute',
    account,
    sourceId: 'dc_bench',
    invocationId: '',
    codeHash: createHash('sha256').update(s.code).digest('hex'),
    code: s.code,
    method: 'run',
    props: s.props ?? {},
    db: s.db ?? {},
    timeoutMs: 30_000,
    limits: { dbMaxBytes: 1024 * 1024, eventMaxBytes: 512 * 1024, emitsPerInvocation: 10_000 },
  };
}

async function scenario(pool: SandboxPool, name: string, seconds: number, inflight: number): Promise<number> {
  const base = task(name);
  const one = (n: number) => pool.execute({ ...base, invocationId: `i${n}`, event: { n, ts: 1 } });
  const warm = await one(0);
  if (warm.error) throw new Error(`${name}: ${warm.error.message}`);
  for (let i = 0; i < 2000; i++) await one(i); // warm up JITs
  let done = 0;
  let errors = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  const lane = async () => {
    while (performance.now() < deadline) {
      const r = await one(done);
      if (r.error) errors++;
      done++;
    }
  };
  await Promise.all(Array.from({ length: inflight }, lane));
  const rate = done / ((performance.now() - started) / 1000);
  if (errors) throw new Error(`${name}: ${errors} invocations failed`);
  return rate;
}

const SETTINGS = isolationSettings(mkdtempSync(join(tmpdir(), 'ess-bench-data-')), { sandboxMaxProcesses: 1000 });

const line = (label: string, value: string) => process.stdout.write(`${label.padEnd(56)} ${value}  (load average ${loadavg()[0].toFixed(1)})\n`);

/** Start-up time and idle resident memory of `n` more accounts' sandboxes (one trivial run each). */
async function accounts(n: number): Promise<{ startMs: number; idleRssMb: number }> {
  const isolation = await setUpIsolation({ ...SETTINGS, sandboxThreadsPerAccount: 1 });
  const pool = new SandboxPool({ threads: 1, heapMb: 256, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-bench-')), vmTimeout: 'adaptive', isolation: isolation.options });
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const r = await pool.execute({ ...task('emit the event', `u_bench_${i}`), invocationId: 'a', event: { n: 1 } });
    if (r.error) throw new Error(r.error.message);
  }
  const startMs = (performance.now() - started) / n;
  await new Promise((r) => setTimeout(r, 2000));
  let rss = 0;
  const sandboxes = readChildren(process.pid);
  for (const pid of sandboxes) rss += treeRssBytes(pid);
  await pool.close();
  return { startMs, idleRssMb: rss / 1048576 / n };
}

function readChildren(pid: number): number[] {
  try {
    return require('node:fs').readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number).filter((c: number) => require('node:fs').readFileSync(`/proc/${c}/comm`, 'utf8').trim() === 'bwrap');
  } catch {
    return [];
  }
}

async function main() {
  const threads = arg('threads', 2);
  const seconds = arg('seconds', 5);
  const inflight = arg('inflight', 64);
  const figures: Record<string, number> = {};
  const isolation = await setUpIsolation(SETTINGS);
  const modes = [
    ['none', undefined],
    ['namespaces', isolation.options],
  ] as const;
  for (let round = 0; round < 2; round++) {
    for (const [mode, options] of modes) {
      const pool = new SandboxPool({ threads, heapMb: 256, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-bench-')), vmTimeout: 'adaptive', isolation: options });
      for (const name of Object.keys(SCENARIOS)) {
        const rate = await scenario(pool, name, seconds, inflight);
        const label = `${name} (isolation ${mode}, round ${round + 1})`;
        figures[label] = Math.round(rate);
        line(label, `${Math.round(rate).toString().padStart(7)} invocations/s  (threads ${threads}, in flight ${inflight})`);
      }
      await pool.close();
    }
  }
  const n = arg('accounts', 10);
  const extra = await accounts(n);
  figures['first run of a new account (ms)'] = Math.round(extra.startMs);
  figures['resident memory per idle account (MB)'] = Math.round(extra.idleRssMb * 10) / 10;
  line(`first run of a new account (${n} accounts)`, `${extra.startMs.toFixed(0)} ms each`);
  line('resident memory per idle account sandbox', `${extra.idleRssMb.toFixed(1)} MB`);
  process.stdout.write(`${JSON.stringify({ bench: 'sandbox.execute', threads, seconds, inflight, figures })}\n`);
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
