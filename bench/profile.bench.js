'use strict';
// `npm run bench -- profile`: where the CPU of the peers pipeline goes in this project (HTTP POST →
// a source's run emits it → subscription → signed POST to a local receiver), one hot source in a
// closed loop as in `npm run bench -- peers`. For each process group (api, runner, the runner's
// sandbox processes, delivery, the run's nats-server, this system's Postgres backends, the bench
// client itself), per delivered event: CPU time and its kernel part, the main threads' share against
// the other threads (V8's GC and compiler helpers, a sandbox's worker threads), read and write
// system calls, context switches. While the load runs it samples where the backlog waits (the
// runner's mailboxes, INVOCATIONS, the router's unacknowledged and unread events). At the end: the
// request → receipt latency, and how delivery routed the events (POSTed directly, or through DELIVERIES);
// with PROFILE_RATE also how late the load generator's own sends were, and where the slowest 1 % of the
// events spent their time (request → emit, emit → receipt), burst by burst.
// Knobs: PROFILE_SECONDS (15), PROFILE_CONNECTIONS (32), PROFILE_ENDPOINTS (1), PROFILE_RATE (requests a
// second offered whatever the answers, instead of the closed loop: to see where the latency of a load the
// system keeps up with goes),
// PROFILE_WARMUP_SECONDS (0: a closed loop over the endpoints for that long, every event delivered, before
// the measured load: the state `peers` measures its rate row in, JIT warm and tables grown),
// PROFILE_GC=1 (the apps run with --trace-gc: their collections during the load are summed),
// BENCH_NODE_ARGS (flags for the apps' node, to compare V8 settings).
const os = require('node:os');
const path = require('node:path');
const ROOT = path.join(__dirname, '..');
const { connect } = require(path.join(ROOT, 'node_modules', 'nats'));
const support = require(path.join(ROOT, 'bench/support/system'));
const { closedLoop, openLoop } = require(path.join(ROOT, 'bench/support/load'));
const { benchHttpKind } = require(path.join(ROOT, 'bench/support/http-client'));
const { startReceiver } = require(path.join(ROOT, 'bench/support/receiver'));
const { deployPipeline, FORWARDER, PIPELINE_SYSTEM_ENV } = require(path.join(ROOT, 'bench/support/pipeline'));
const procStats = require(path.join(ROOT, 'bench/support/proc-stats'));

const SECONDS = Number(process.env.PROFILE_SECONDS || 15);
const CONNECTIONS = Number(process.env.PROFILE_CONNECTIONS || 32);
const ENDPOINTS = Number(process.env.PROFILE_ENDPOINTS || 1);
const RATE = Number(process.env.PROFILE_RATE || 0);
const WARMUP_SECONDS = Number(process.env.PROFILE_WARMUP_SECONDS || 0);
const TRACE_GC = process.env.PROFILE_GC === '1';
const APPS = ['api', 'runner', 'delivery'];

const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

/** The process groups of a running system, each read anew at every reading (sandboxes start and stop). */
function groups(system) {
  const runner = system.pid('runner');
  return {
    api: () => [system.pid('api')],
    runner: () => [runner],
    'runner sandboxes': () => procStats.processTree(runner).filter((p) => p !== runner),
    delivery: () => [system.pid('delivery')],
    ...support.systemServerPids(system),
    'bench client': () => [process.pid],
  };
}

/** Every 2 s: where events wait (runner mailboxes, stored invocations, the router's consumer on EMITS). */
async function sampleBacklog(system) {
  const nc = await connect(support.natsAdmin());
  const jsm = await nc.jetstreamManager();
  const streamName = (base) => (system.natsPrefix ? `${system.natsPrefix}_${base}` : base);
  const samples = [];
  const timer = setInterval(async () => {
    try {
      const metrics = await support.scrape(system.ports.runner);
      const invocations = (await jsm.streams.info(streamName('INVOCATIONS'))).state.messages;
      const router = await jsm.consumers.info(streamName('EMITS'), 'router');
      samples.push({ mailboxes: metrics.runner_mailbox_depth, invocations, routerUnacked: router.num_ack_pending, routerUnread: router.num_pending });
    } catch (e) {
      samples.push({ error: e.message });
    }
  }, 2000);
  return {
    async stop() {
      clearInterval(timer);
      await nc.close();
      return samples;
    },
  };
}

/** Collections in an app's output (its `--trace-gc` lines): count and main-thread ms of each kind. */
function gcSummary(output) {
  const sum = { scavenges: 0, scavengeMs: 0, markCompacts: 0, markCompactMs: 0 };
  for (const line of output.split('\n')) {
    const m = /: (Scavenge|Mark-Compact)\b[^,]*, ([\d.]+) \//.exec(line);
    if (!m) continue;
    if (m[1] === 'Scavenge') (sum.scavenges++, (sum.scavengeMs += Number(m[2])));
    else (sum.markCompacts++, (sum.markCompactMs += Number(m[2])));
  }
  return sum;
}

/** The runner's and delivery's metrics now. */
async function appMetrics(system) {
  const [runner, delivery] = await Promise.all([support.scrape(system.ports.runner), support.scrape(system.ports.delivery)]);
  return { runner, delivery };
}

/** Mean batch sizes between two readings of `appMetrics`: the runner's invocations per sandbox task (per source) and sources per task, delivery's events per index batch. */
function batchSizes(before, after) {
  const mean = (app, name) => (after[app][`${name}_sum`] - before[app][`${name}_sum`]) / (after[app][`${name}_count`] - before[app][`${name}_count`]);
  return { task: mean('runner', 'runner_run_batch_size'), sources: mean('runner', 'runner_run_task_sources'), index: mean('delivery', 'delivery_index_batch_size') };
}

/** The request → receipt p99 of the requests sent in each second of the load. */
function perSecondP99(stats, receiver) {
  const seconds = [];
  for (const [n, t] of stats.acceptedN) {
    const i = Math.floor((t - stats.startedAt) / 1000);
    (seconds[i] ??= []).push(receiver.receipts.get(n) - t);
  }
  return [...seconds].map((l) => (l ? support.percentile(l.sort((a, b) => a - b), 0.99) : '–'));
}

/**
 * Where the slowest 1 % of the events spent their time: they come in bursts (sent within 200 ms of each other); per
 * burst, request → emit and emit → receipt, and how late the load generator's own sends were around it (from 150 ms
 * before the burst to its last receipt). Sends late by as much as the events were slow mean the bench client's
 * process did not run either: the machine was busy with everything at once, not waiting on one stage.
 */
function slowestBursts(stats, receiver, latencies) {
  const p99 = support.percentile(latencies, 0.99);
  const sent = [...stats.acceptedN].filter(([n]) => receiver.emittedAt.has(n)).map(([n, t]) => ({ n, t, emit: receiver.emittedAt.get(n), got: receiver.receipts.get(n) }));
  const bursts = [];
  let last = -Infinity;
  for (const e of sent.filter((x) => x.got - x.t >= p99).sort((a, b) => a.t - b.t)) {
    if (e.t - last > 200) bursts.push([]);
    bursts[bursts.length - 1].push(e);
    last = e.t;
  }
  const range = (xs) => `${Math.min(...xs)}–${Math.max(...xs)}`;
  return bursts.map((b) => {
    const from = b[0].t - 150;
    const to = Math.max(...b.map((e) => e.got));
    const lags = sent.filter((e) => e.t >= from && e.t <= to).map((e) => stats.sendLagMs.get(e.n) ?? 0);
    const at = ((b[0].t - stats.startedAt) / 1000).toFixed(1);
    return `${at} s: ${b.length} events, request → emit ${range(b.map((e) => e.emit - e.t))} ms, emit → receipt ${range(b.map((e) => e.got - e.emit))} ms, sends late by up to ${Math.round(Math.max(0, ...lags))} ms`;
  });
}

const fixed = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : '–');

async function main() {
  if (TRACE_GC) process.env.BENCH_NODE_ARGS = `${process.env.BENCH_NODE_ARGS || ''} --trace-gc`.trim();
  const receiver = await startReceiver();
  const system = await support.startSystem(PIPELINE_SYSTEM_ENV);
  try {
    const { urls } = await deployPipeline(system, receiver, { count: ENDPOINTS, code: FORWARDER, name: 'profiled' });
    if (WARMUP_SECONDS > 0) {
      const warm = await closedLoop({ urls, connections: CONNECTIONS, seconds: WARMUP_SECONDS, firstN: 10_000_000 });
      await support.until(async () => [...warm.acceptedN.keys()].every((n) => receiver.receipts.has(n)), { timeoutMs: 120_000, what: 'every warm-up request to arrive' });
      receiver.reset();
    }
    const measured = groups(system);
    const outputBefore = Object.fromEntries(APPS.map((a) => [a, system.logs(a).length]));
    const backlog = await sampleBacklog(system);
    const metricsBefore = await appMetrics(system);
    const before = procStats.take(measured);
    const startedAt = Date.now();
    const stats = RATE > 0 ? await openLoop({ urls, rate: RATE, seconds: SECONDS, firstN: 50_000_000 }) : await closedLoop({ urls, connections: CONNECTIONS, seconds: SECONDS, firstN: 50_000_000 });
    const samples = await backlog.stop();
    await support.until(async () => receiver.receipts.size >= stats.accepted, { timeoutMs: 120_000, what: 'every accepted request to arrive' });
    const wallMs = Date.now() - startedAt;
    const metricsAfter = await appMetrics(system);
    const batches = batchSizes(metricsBefore, metricsAfter);
    const latencies = [...stats.acceptedN].map(([n, t]) => receiver.receipts.get(n) - t).sort((a, b) => a - b);
    const emitted = [...stats.acceptedN.keys()].filter((n) => receiver.emittedAt.has(n)).map((n) => receiver.receipts.get(n) - receiver.emittedAt.get(n)).sort((a, b) => a - b);
    const rows = procStats.perEvent(before, procStats.take(measured), stats.accepted);

    console.log(`profile: ${ENDPOINTS} source(s), ${RATE > 0 ? `${RATE} requests/s offered` : `${CONNECTIONS} connections`} for ${SECONDS} s${WARMUP_SECONDS > 0 ? ` after ${WARMUP_SECONDS} s of warm-up` : ''}${process.env.BENCH_NODE_ARGS ? `, apps with node ${process.env.BENCH_NODE_ARGS}` : ''}; ${os.cpus().length} cores; bench client over ${benchHttpKind()}`);
    console.log(`${stats.accepted} events accepted and delivered in ${wallMs} ms: ${Math.round((stats.accepted / wallMs) * 1000)}/s; load average ${load()}; the load from ${new Date(startedAt).toISOString()} (its seconds below count from there)\n`);
    console.log('| process | CPU µs/event | kernel | main threads | other threads | reads/event | writes/event | context switches/event | resident MiB |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const r of rows) {
      console.log(`| ${r.name} | ${fixed(r.cpuUs)} | ${fixed(r.kernelUs)} | ${fixed(r.mainThreadUs)} | ${fixed(r.otherThreadsUs)} | ${fixed(r.reads, 2)} | ${fixed(r.writes, 2)} | ${fixed(r.contextSwitches, 2)} | ${fixed(r.rssMb)} |`);
    }
    const server = rows.filter((r) => r.name !== 'bench client').reduce((a, r) => a + r.cpuUs, 0);
    console.log(`| all but the bench client | ${fixed(server)} | | | | | | | |`);
    // The bench client does the same work per event in every run: its cost is the machine's speed, so runs of
    // different code compare by the system's cost in units of it (the machine drifts by up to a quarter within minutes).
    const client = rows.find((r) => r.name === 'bench client').cpuUs;
    const units = client > 0 ? server / client : 0;
    console.log(`\nall but the bench client per unit of the bench client's own CPU per event (to compare runs as the machine's speed moves): ${fixed(units, 2)}`);

    const route = (path) => metricsAfter.delivery[`delivery_webhook_routes_total{path="${path}"}`] ?? 0;
    console.log(`\nrequest → receipt p50 ${support.percentile(latencies, 0.5)} ms, p99 ${support.percentile(latencies, 0.99)} ms, max ${latencies[latencies.length - 1]} ms (of which emit → receipt p50 ${support.percentile(emitted, 0.5)} ms, p99 ${support.percentile(emitted, 0.99)} ms); delivery routed ${route('direct')} events directly and ${route('queue')} through DELIVERIES`);
    console.log(`invocations per sandbox task ${fixed(batches.task, 1)}${Number.isFinite(batches.sources) ? ` per source, sources per sandbox task ${fixed(batches.sources, 2)}` : ''}, events per delivery index batch ${fixed(batches.index, 1)} (means)`);
    console.log(`request → receipt p99 per second of the load (ms): ${perSecondP99(stats, receiver).join(' ')}`);
    if (RATE > 0) {
      const lags = [...stats.sendLagMs.values()].sort((a, b) => a - b);
      console.log(`the load generator's sends late against their schedule: p99 ${fixed(support.percentile(lags, 0.99))} ms, max ${fixed(lags[lags.length - 1])} ms; the slowest 1 % of the events, in bursts:`);
      for (const line of slowestBursts(stats, receiver, latencies)) console.log(`  ${line}`);
    }
    console.log('\nbacklog every 2 s (runner mailboxes / INVOCATIONS stored / router unacknowledged / router unread):');
    console.log(samples.map((s) => (s.error ? `(${s.error})` : `${s.mailboxes}/${s.invocations}/${s.routerUnacked}/${s.routerUnread}`)).join('  '));
    if (TRACE_GC) {
      console.log('\ngarbage collection during the load (main-thread time):');
      for (const app of APPS) {
        const g = gcSummary(system.logs(app).slice(outputBefore[app]));
        console.log(`  ${app}: ${g.scavenges} scavenges (${Math.round(g.scavengeMs)} ms), ${g.markCompacts} mark-compacts (${Math.round(g.markCompactMs)} ms): ${fixed(((g.scavengeMs + g.markCompactMs) * 1000) / stats.accepted)} µs/event`);
      }
    }
    console.log(JSON.stringify({ bench: 'profile', endpoints: ENDPOINTS, events: stats.accepted, wall_ms: wallMs, p50_ms: support.percentile(latencies, 0.5), p99_ms: support.percentile(latencies, 0.99), emit_p50_ms: support.percentile(emitted, 0.5), emit_p99_ms: support.percentile(emitted, 0.99), routed_direct: route('direct'), routed_queue: route('queue'), invocations_per_task: batches.task, sources_per_task: batches.sources, events_per_index_batch: batches.index, client_units: units, load_average: os.loadavg(), processes: rows, backlog: samples }));
  } finally {
    await receiver.close();
    await system.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
