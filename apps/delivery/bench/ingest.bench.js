'use strict';
// The whole path: HTTP request to a source endpoint → api → INVOCATIONS → runner
// (the source emits) → EMITS → delivery → signed POST received by a local
// webhook receiver. Figures: sustained events/s, and emit→receipt latency at a
// steady request rate. Knobs: BENCH_EVENTS (20000), BENCH_RATE (1000),
// BENCH_SECONDS (10), BENCH_ENDPOINTS (20), BENCH_CONCURRENCY (128),
// BENCH_PROFILE_APP=api,runner,delivery (CPU profiles into /tmp/prof), BENCH_BACKPRESSURE=1 (ingest bounds on).
// The load generator and receiver are the ones `npm run bench -- peers` uses.
const path = require('node:path');
const ROOT = path.join(__dirname, '..', '..', '..');
const { startSystem, percentile, until, cpuAccount } = require(path.join(ROOT, 'bench/support/system'));
const { deployPipeline } = require(path.join(ROOT, 'bench/support/pipeline'));
const { closedLoop, openLoop } = require(path.join(ROOT, 'bench/support/load'));
const { startReceiver } = require(path.join(ROOT, 'bench/support/receiver'));

const EVENTS = Number(process.env.BENCH_EVENTS || 20000);
const RATE = Number(process.env.BENCH_RATE || 1000);
const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const ENDPOINTS = Number(process.env.BENCH_ENDPOINTS || 20);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY || 128);
const FORWARDER = `module.exports = {
  name: "Forwarder", version: "1",
  props: { http: { type: "$.interface.http" } },
  async run(event) { this.$emit({ t: event.body.t, n: event.body.n, pad: "x".repeat(200) }); },
};`;

async function main() {
  // BENCH_BACKPRESSURE=1 keeps the ingest bounds at their defaults (429 with Retry-After, as `npm run bench -- peers` runs).
  const bounds = process.env.BENCH_BACKPRESSURE === '1' ? {} : { INGEST_MAX_PENDING_PER_SOURCE: '0', INGEST_MAX_PENDING: '0', INGEST_MAX_PENDING_DELIVERIES_PER_ACCOUNT: '0' };
  const system = await startSystem({ PARTITIONS: '32', HTTP_RATE_PER_SEC: '0', EMITS_PER_SECOND_PER_ACCOUNT: '0', ...bounds });
  const receiver = await startReceiver();
  try {
    const { urls } = await deployPipeline(system, receiver, { count: ENDPOINTS, code: FORWARDER, name: 'f' });
    await new Promise((r) => setTimeout(r, 2000));

    // 1. Sustained: EVENTS requests, CONCURRENCY in flight, spread over the endpoints.
    const account = cpuAccount(system, ['api', 'runner', 'delivery']);
    const sent = await closedLoop({ urls, connections: CONCURRENCY, seconds: 3600, requests: EVENTS });
    const failed = sent.sent - sent.accepted;
    const complete = await until(async () => receiver.receipts.size >= sent.accepted, { what: 'every event delivered', timeoutMs: 600_000 }).then(() => true, () => false);
    const last = Math.max(...receiver.receipts.values());
    const cpu = account.done(last - sent.startedAt, receiver.receipts.size);
    const throughput = Math.round((receiver.receipts.size / (last - sent.startedAt)) * 1000);
    console.log(`HTTP ingest → signed POST: ${receiver.receipts.size}/${EVENTS} events in ${last - sent.startedAt} ms = ${throughput} events/s (ingest ${Math.round((EVENTS / (sent.endedAt - sent.startedAt)) * 1000)} req/s, ${failed} requests failed)${complete ? '' : ' INCOMPLETE'}`);
    console.log(`  CPU during the run: ${cpu}`);
    console.log(`  webhook deliveries: ${await webhookRoutes(system)}`);
    receiver.reset();

    // 2. Latency at a steady rate: request sent → signed POST received.
    const steady = await openLoop({ urls, rate: RATE, seconds: SECONDS, firstN: EVENTS });
    await until(async () => receiver.receipts.size >= steady.accepted, { what: 'the latency run delivered', timeoutMs: 300_000 }).catch(() => undefined);
    const lat = [...steady.acceptedN].filter(([n]) => receiver.receipts.has(n)).map(([n, t]) => receiver.receipts.get(n) - t).sort((a, b) => a - b);
    const emitLat = receiver.emitLatencies.slice().sort((a, b) => a - b);
    console.log(`latency at ${RATE} req/s for ${SECONDS} s (${receiver.receipts.size}/${steady.sent} delivered):`);
    console.log(`  request sent → received: p50 ${percentile(lat, 0.5)} ms, p99 ${percentile(lat, 0.99)} ms, max ${lat[lat.length - 1]} ms`);
    console.log(`  emit (event id time) → received: p50 ${percentile(emitLat, 0.5)} ms, p99 ${percentile(emitLat, 0.99)} ms, max ${emitLat[emitLat.length - 1]} ms`);
    console.log(`  signatures verified with standardwebhooks: ${receiver.verified} ok, ${receiver.bad} bad`);
    console.log(JSON.stringify({ bench: 'delivery-ingest', events: EVENTS, throughput_events_per_s: throughput, rate: RATE, request_to_receipt_ms: { p50: percentile(lat, 0.5), p99: percentile(lat, 0.99) }, emit_to_receipt_ms: { p50: percentile(emitLat, 0.5), p99: percentile(emitLat, 0.99) } }));
  } finally {
    await receiver.close();
    await system.stop();
  }
}

/** How the delivery app routed webhook deliveries so far: POSTed straight from the router, or through DELIVERIES. */
async function webhookRoutes(system) {
  const text = await fetch(`http://127.0.0.1:${system.ports.delivery}/metrics`).then((r) => r.text(), () => '');
  const count = (path) => Number(new RegExp(`delivery_webhook_routes_total\\{path="${path}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
  return `${count('direct')} direct, ${count('queue')} through DELIVERIES`;
}

main().catch((e) => {
  console.error(`ingest bench failed: ${e.stack || e.message}`);
  process.exit(1);
});
