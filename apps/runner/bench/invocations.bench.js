'use strict';
// Runner throughput: trivial invocations (each emits one small event) published
// straight to the INVOCATIONS stream (HTTP ingest excluded), drained by ONE
// runner replica while api + delivery run beside it.
// Figures: invocations per second, run duration p50/p99 (runner histogram).
const path = require('node:path');
const { connect } = require('nats');
const ROOT = path.join(__dirname, '..', '..', '..');
const { Names, partitionOf, encodeJson } = require(path.join(ROOT, 'dist/libs/contracts/src'));
const { natsAdmin, startSystem, createUser, api, scrape, total, histogramQuantile, until } = require(path.join(ROOT, 'bench/support/system'));

const SOURCES = Number(process.env.BENCH_SOURCES || 200);
const INVOCATIONS = Number(process.env.BENCH_INVOCATIONS || 40_000);
const PARTITIONS = 32;
const TRIVIAL = `module.exports = { name: "Trivial", version: "1", async run(event) { this.$emit({ n: event.n }); } };`;

async function main() {
  const system = await startSystem({ PARTITIONS: String(PARTITIONS), HTTP_RATE_PER_SEC: '0', EMITS_PER_SECOND_PER_ACCOUNT: '0', ...(process.env.BENCH_THREADS ? { WORKER_THREADS: process.env.BENCH_THREADS } : {}) }, { apps: process.env.BENCH_NO_DELIVERY ? ['api'] : ['api', 'delivery'] });
  try {
    await system.startApp('runner', 'runner');
    const user = createUser(system);
    const client = api(system, user.apiKey);
    const comp = await client.post('/components', { component_code: TRIVIAL });
    const ids = [];
    for (let i = 0; i < SOURCES; i++) ids.push((await client.post('/sources', { component_id: comp.body.data.id, name: `t${i}` })).body.data.id);
    await until(async () => total(await scrape(system.ports.runner), 'runner_actors') >= SOURCES, { what: 'actors loaded' });
    for (const id of ids) await client.post(`/sources/${id}/run`, { event: { n: -1 } });
    await until(async () => total(await scrape(system.ports.runner), 'runner_invocations_total') >= SOURCES, { what: 'warm-up runs' });
    await system.stopApp('runner');

    const names = new Names(system.natsPrefix);
    const nc = await connect(natsAdmin());
    const js = nc.jetstream();
    const started = Date.now();
    for (let i = 0; i < INVOCATIONS; i += 2000) {
      const batch = [];
      for (let j = i; j < Math.min(INVOCATIONS, i + 2000); j++) {
        const sourceId = ids[j % ids.length];
        const invocationId = `inv_bench${j}`;
        const msg = { invocationId, sourceId, kind: 'manual', event: { n: j }, createdAtMs: Date.now() };
        batch.push(js.publish(names.invocation(partitionOf(sourceId, PARTITIONS), sourceId), encodeJson(msg), { msgID: invocationId }));
      }
      await Promise.all(batch);
    }
    const publishSeconds = (Date.now() - started) / 1000;
    await nc.close();

    await system.startApp('runner', 'runner', {}, process.env.BENCH_RUNNER_NODE_ARGS ? process.env.BENCH_RUNNER_NODE_ARGS.split(' ') : []);
    let t0 = 0;
    let c0 = 0;
    let t1 = 0;
    let last;
    await until(
      async () => {
        last = await scrape(system.ports.runner);
        const c = total(last, 'runner_invocations_total');
        const now = performance.now();
        if (!t0 && c > 0) {
          t0 = now;
          c0 = c;
        }
        if (c >= INVOCATIONS) t1 = now;
        return t1;
      },
      { intervalMs: 50, timeoutMs: 600_000, what: 'all invocations processed' },
    );
    const rate = (INVOCATIONS - c0) / ((t1 - t0) / 1000);
    // The counter includes redelivered invocations (processed again, their emits deduplicated): wait for the stream itself.
    const check = await connect(natsAdmin());
    const jsm = await check.jetstreamManager();
    let emitted = 0;
    await until(async () => (emitted = (await jsm.streams.info(names.emitsStream)).state.messages) >= INVOCATIONS + SOURCES, { timeoutMs: 60_000, what: 'every emit in EMITS' }).catch(() => undefined);
    await check.close();
    if (emitted < INVOCATIONS + SOURCES) {
      const outcomes = Object.entries(last).filter(([k]) => k.startsWith('runner_invocations_total{'));
      throw new Error(`only ${emitted} events in EMITS, expected ${INVOCATIONS + SOURCES}; runner outcomes: ${JSON.stringify(outcomes)}`);
    }
    const p50 = histogramQuantile(last, 'runner_run_duration_seconds', 0.5) * 1000;
    const p99 = histogramQuantile(last, 'runner_run_duration_seconds', 0.99) * 1000;
    console.log(`runner throughput: ${INVOCATIONS} trivial invocations over ${SOURCES} sources of one account, 1 replica, SANDBOX_ISOLATION=${system.env.SANDBOX_ISOLATION || 'namespaces'} (load average ${require('node:os').loadavg()[0].toFixed(1)})`);
    console.log(`  published to the stream beforehand in ${publishSeconds.toFixed(1)} s`);
    console.log(`  drained at ${Math.round(rate)} invocations/s (EMITS holds ${emitted} events: every run emitted once)`);
    console.log(`  sandbox run duration p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms (histogram estimate)`);
    console.log(`  runner RSS ${(total(last, 'runner_process_resident_memory_bytes') / 1048576).toFixed(0)} MB`);
  } finally {
    await system.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
