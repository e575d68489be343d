/**
 * Sandbox throughput: trivial invocations per second through one SandboxPool.
 *   npm run build && node dist/libs/sandbox/bench/execute.bench.js [--threads 2] [--seconds 5] [--inflight 64]
 * Prints one line per scenario (and a JSON line with every figure at the end).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

async function scenario(pool: SandboxPool, name: string, seconds: number, inflight: number): Promise<number> {
  const s = SCENARIOS[name];
  const base: ExecuteTask = {
    kind: 'execute',
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

async function main() {
  const threads = arg('threads', 2);
  const seconds = arg('seconds', 5);
  const inflight = arg('inflight', 64);
  const figures: Record<string, number> = {};
  for (const vmTimeout of ['always', 'adaptive'] as const) {
    const pool = new SandboxPool({ threads, heapMb: 256, npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-bench-')), vmTimeout });
    for (const name of Object.keys(SCENARIOS)) {
      const rate = await scenario(pool, name, seconds, inflight);
      const label = `${name} (vmTimeout ${vmTimeout})`;
      figures[label] = Math.round(rate);
      process.stdout.write(`${label.padEnd(48)} ${Math.round(rate).toString().padStart(7)} invocations/s  (threads ${threads}, in flight ${inflight})\n`);
    }
    await pool.close();
  }
  process.stdout.write(`${JSON.stringify({ bench: 'sandbox.execute', threads, seconds, inflight, figures })}\n`);
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
