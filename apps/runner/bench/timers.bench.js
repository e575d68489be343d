'use strict';
// 10,000 active timer sources on ONE runner replica: fire lag (slot → start of
// the run, from the runner's histogram) and runner memory per deployed source.
// Desired states are written straight into KV `sources` (as the api does), so
// the figure is the runner's own; api and delivery run beside it.
const path = require('node:path');
const { connect } = require('nats');
const ROOT = path.join(__dirname, '..', '..', '..');
const { Names, partitionOf, encodeJson, sha256Hex } = require(path.join(ROOT, 'dist/libs/contracts/src'));
const { natsAdmin, startSystem, scrape, total, histogramQuantile, until } = require(path.join(ROOT, 'bench/support/system'));

const SOURCES = Number(process.env.BENCH_TIMERS || 10_000);
const INTERVAL = Number(process.env.BENCH_INTERVAL_SECONDS || 60);
const MEASURE_SECONDS = Number(process.env.BENCH_SECONDS || 2 * INTERVAL);
const PARTITIONS = 32;
const CODE = `module.exports = {
  name: "Bench timer", version: "1",
  props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 60 } } },
  async run(event) { this.$emit({ t: event.timestamp }); },
};`;

const mb = (bytes) => (bytes / 1048576).toFixed(1);

async function main() {
  const system = await startSystem({ PARTITIONS: String(PARTITIONS), TIMER_MIN_INTERVAL_SECONDS: '1' }, { apps: ['api', 'delivery'] });
  const nc = await connect(natsAdmin());
  try {
    await system.startApp('runner', 'runner', {}, ['--expose-gc', '--require', path.join(ROOT, 'bench/support/gc-on-signal.js')]);
    const port = system.ports.runner;
    // Memory of live objects: a full collection in the runner (SIGWINCH, see gc-on-signal.js) before each reading.
    const heapFloor = async () => {
      let heap = Infinity;
      let rss = Infinity;
      for (let i = 0; i < 3; i++) {
        process.kill(system.pid('runner'), 'SIGWINCH');
        await new Promise((r) => setTimeout(r, 1500));
        const m = await scrape(port);
        heap = Math.min(heap, total(m, 'runner_nodejs_heap_size_used_bytes'));
        rss = Math.min(rss, total(m, 'runner_process_resident_memory_bytes'));
      }
      return { heap, rss };
    };
    const base = await heapFloor();
    const names = new Names(system.natsPrefix);
    const js = nc.jetstream();
    const kv = await js.views.kv(names.sourcesBucket);
    const os = await js.views.os(names.componentsStore);
    const hash = sha256Hex(CODE);
    await os.putBlob({ name: hash }, Buffer.from(CODE));
    const started = Date.now();
    for (let i = 0; i < SOURCES; i += 500) {
      const puts = [];
      for (let j = i; j < Math.min(SOURCES, i + 500); j++) {
        const sourceId = `dc_benchtimer${String(j).padStart(6, '0')}`;
        const state = {
          sourceId, ownerId: 'u_bench', userId: 'u_bench', rev: 1, active: true, componentId: 'sc_bench', codeHash: hash,
          configuredProps: { timer: { intervalSeconds: INTERVAL } }, runTimeoutMs: 30_000, updatedAtMs: Date.now(),
        };
        puts.push(kv.put(names.sourceKey(partitionOf(sourceId, PARTITIONS), sourceId), encodeJson(state)));
      }
      await Promise.all(puts);
    }
    await until(async () => total(await scrape(port), 'runner_timer_sources') >= SOURCES, { timeoutMs: 600_000, intervalMs: 1000, what: 'all timers scheduled' });
    const deploySeconds = (Date.now() - started) / 1000;
    const loaded = await heapFloor();
    const heapPer = (loaded.heap - base.heap) / SOURCES;
    const rssPer = (loaded.rss - base.rss) / SOURCES;
    console.log(`timers: ${SOURCES} timer sources (every ${INTERVAL} s) on 1 runner replica, deployed and scheduled in ${deploySeconds.toFixed(1)} s`);
    console.log(`  runner memory per deployed source: heap ${(heapPer / 1024).toFixed(1)} KB, RSS ${(rssPer / 1024).toFixed(1)} KB (heap ${mb(loaded.heap)} MB, RSS ${mb(loaded.rss)} MB; after a full GC)`);

    // Fire lag over the measurement window only (histogram deltas).
    const before = await scrape(port);
    await new Promise((r) => setTimeout(r, MEASURE_SECONDS * 1000));
    const after = await scrape(port);
    const delta = {};
    for (const [k, v] of Object.entries(after)) if (k.startsWith('runner_timer_fire_lag_seconds')) delta[k] = v - (before[k] || 0);
    const fired = delta['runner_timer_fire_lag_seconds_count'] || 0;
    console.log(`  ${fired} timer runs in ${MEASURE_SECONDS} s (${(fired / MEASURE_SECONDS).toFixed(0)}/s expected ${(SOURCES / INTERVAL).toFixed(0)}/s)`);
    const buckets = Object.entries(delta).filter(([k]) => k.includes('_bucket')).map(([k, v]) => `${/le="([^"]+)"/.exec(k)[1]}:${v}`);
    console.log(`  lag histogram (cumulative, s:count): ${buckets.join(' ')}`);
    console.log(`  runner event loop lag p99 ${(total(after, 'runner_nodejs_eventloop_lag_p99_seconds') * 1000).toFixed(0)} ms, max ${(total(after, 'runner_nodejs_eventloop_lag_max_seconds') * 1000).toFixed(0)} ms`);
    console.log(`  fire lag p50 ${(histogramQuantile(delta, 'runner_timer_fire_lag_seconds', 0.5) * 1000).toFixed(0)} ms, p99 ${(histogramQuantile(delta, 'runner_timer_fire_lag_seconds', 0.99) * 1000).toFixed(0)} ms (histogram estimate)`);
  } finally {
    await nc.close();
    await system.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
