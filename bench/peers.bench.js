'use strict';
// `npm run bench -- peers`: the pipeline users compare systems on, run against
// this project and Node-RED 4 in the same run, with the same load generator
// (bench/support/load.js) and the same webhook receiver (bench/support/receiver.js):
// HTTP POST of a 200-byte JSON body → a source's run emits it → subscription →
// signed POST to the receiver (Node-RED: http in → function → http request).
// Scenarios: one hot endpoint and PEERS_ENDPOINTS endpoints, PEERS_CONNECTIONS
// keep-alive connections for PEERS_SECONDS each (closed loop); latency at
// PEERS_RATE requests/s offered to one endpoint (open loop); and this project
// under overload: PEERS_OVERLOAD_CONNECTIONS senders on one source, each waiting
// out a 429's Retry-After before it sends again (back-pressure).
// Each row: accepted/s, delivered/s, request → receipt p50/p99, late (accepted and
// not received when nothing more had arrived for 15 s; the run's end checks they all
// came), duplicates,
// CPU per delivered event per process, the machine's load average.
const os = require('node:os');
const path = require('node:path');
const ROOT = path.join(__dirname, '..');
const support = require(path.join(ROOT, 'bench/support/system'));
const { closedLoop, openLoop } = require(path.join(ROOT, 'bench/support/load'));
const { startReceiver } = require(path.join(ROOT, 'bench/support/receiver'));
const { startNodeRed } = require(path.join(ROOT, 'bench/support/node-red'));
const { deployPipeline } = require(path.join(ROOT, 'bench/support/pipeline'));

const { startSystem, until, percentile, scrape, total, cpuParts, systemCpuSources, benchClientCpu, cpuSecondsOfTree } = support;
const SECONDS = Number(process.env.PEERS_SECONDS || 15);
const CONNECTIONS = Number(process.env.PEERS_CONNECTIONS || 32);
const ENDPOINTS = Number(process.env.PEERS_ENDPOINTS || 20);
const RATE = Number(process.env.PEERS_RATE || 1000);
const RATE_SECONDS = Number(process.env.PEERS_RATE_SECONDS || 10);
const OVERLOAD_CONNECTIONS = Number(process.env.PEERS_OVERLOAD_CONNECTIONS || 512);
const FORWARDER = `export default {
  name: "Forwarder", version: "1",
  props: { http: { type: "$.interface.http" } },
  async run(event) { this.$emit(event.body); },
};`;

const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

/** Waits until every accepted request reached the receiver (or nothing arrived for `quietMs`), then measures. */
async function settle(receiver, stats, quietMs = 15_000) {
  let last = -1;
  let lastChange = Date.now();
  while (Date.now() - lastChange < quietMs) {
    let have = 0;
    for (const n of stats.acceptedN.keys()) if (receiver.receipts.has(n)) have++;
    if (have === stats.acceptedN.size) break;
    if (have !== last) {
      last = have;
      lastChange = Date.now();
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const lat = [];
  let lastAt = stats.endedAt;
  let lost = 0;
  for (const [n, t] of stats.acceptedN) {
    const at = receiver.receipts.get(n);
    if (at === undefined) lost++;
    else {
      lat.push(at - t);
      if (at > lastAt) lastAt = at;
    }
  }
  lat.sort((a, b) => a - b);
  const delivered = lat.length;
  const wallMs = lastAt - stats.startedAt;
  return {
    accepted: stats.accepted,
    rejected: stats.rejected,
    failed: stats.failed,
    delivered,
    lost,
    duplicates: receiver.duplicates,
    wallMs,
    acceptedPerS: stats.accepted / ((stats.endedAt - stats.startedAt) / 1000),
    deliveredPerS: delivered / (wallMs / 1000),
    p50: percentile(lat, 0.5),
    p99: percentile(lat, 0.99),
  };
}

function row(system, scenario, r, cpu, extra = '') {
  const per = cpu.parts.map((p) => `${p.name} ${Math.round(p.perItemUs)}`).join(', ');
  const sum = cpu.parts.filter((p) => p.name !== 'bench client').reduce((a, p) => a + p.perItemUs, 0);
  console.log(
    `| ${system} | ${scenario} | ${Math.round(r.acceptedPerS)} | ${Math.round(r.deliveredPerS)} | ${r.p50} ms | ${r.p99} ms | ${r.lost} | ${r.duplicates} | ${Math.round(sum)} µs (${per}) | ${load()} |${extra}`,
  );
  return { ...r, cpuUsPerEvent: Math.round(sum) };
}

/** Every request this project accepted in the run (all rows), to check at the end that each one arrived, however late. */
const acceptedByUs = new Set();

async function measure(receiver, cpuSources, run, ours = false) {
  receiver.reset();
  const account = cpuParts(cpuSources);
  const stats = await run();
  if (ours) for (const n of stats.acceptedN.keys()) acceptedByUs.add(n);
  const r = await settle(receiver, stats);
  return { r, cpu: account.done(r.wallMs, Math.max(1, r.delivered)) };
}

async function main() {
  console.log(`peers: ${SECONDS} s × ${CONNECTIONS} connections per closed-loop row; load average (1, 5, 15 min) at each row's end; ${os.cpus().length} cores`);
  const receiver = await startReceiver();
  let red;
  let system;
  const results = {};
  try {
    red = await startNodeRed({ endpoints: ENDPOINTS, receiverUrl: receiver.url });
    system = await startSystem({ PARTITIONS: '32', HTTP_RATE_PER_SEC: '0', EMITS_PER_SECOND_PER_ACCOUNT: '0' });
    // Warm-up: every source deployed and delivering, Node-RED's flows compiled.
    const { urls } = await deployPipeline(system, receiver, { count: ENDPOINTS, code: FORWARDER, name: 'peer' });
    await closedLoop({ urls: red.urls, connections: CONNECTIONS, seconds: 2, firstN: -2_000_000 });
    await new Promise((r) => setTimeout(r, 2000));

    const ours = { ...systemCpuSources(system, ['api', 'runner', 'delivery']), 'bench client': benchClientCpu };
    const theirs = { 'node-red': () => cpuSecondsOfTree(red.pid), 'bench client': benchClientCpu };
    const deliveryPort = system.ports.delivery;
    const indexed = async () => total(await scrape(deliveryPort), 'delivery_events_indexed_total{channel_class="emits"}');
    let n = 0;
    const next = () => (n += 10_000_000);

    console.log(`\n| system | scenario | accepted/s | delivered/s | p50 | p99 | late | duplicates | CPU per delivered event | load avg |`);
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    for (const [scenario, count] of [['one hot source', 1], [`${ENDPOINTS} sources`, ENDPOINTS]]) {
      const nr = await measure(receiver, theirs, () => closedLoop({ urls: red.urls.slice(0, count), connections: CONNECTIONS, seconds: SECONDS, firstN: next() }));
      results[`node-red ${scenario}`] = row(`Node-RED ${red.version}`, scenario, nr.r, nr.cpu);
      const before = await indexed();
      const me = await measure(receiver, ours, () => closedLoop({ urls: urls.slice(0, count), connections: CONNECTIONS, seconds: SECONDS, firstN: next() }), true);
      await new Promise((r) => setTimeout(r, 1000));
      const indexedNow = (await indexed()) - before;
      results[`ours ${scenario}`] = row('this project', scenario, me.r, me.cpu, ` indexed ${indexedNow}/${me.r.delivered} |`);
      console.log(`|  | ratio (delivered/s) | | **${(me.r.deliveredPerS / nr.r.deliveredPerS).toFixed(2)}×** | | | | | | |`);
    }
    for (const [name, target, sources] of [[`Node-RED ${red.version}`, red.urls, theirs], ['this project', urls, ours]]) {
      const m = await measure(receiver, sources, () => openLoop({ urls: target.slice(0, 1), rate: RATE, seconds: RATE_SECONDS, firstN: next() }), sources === ours);
      results[`${name} at ${RATE}/s`] = row(name, `${RATE} req/s offered to one endpoint`, m.r, m.cpu);
    }
    const over = await measure(receiver, ours, () => closedLoop({ urls: urls.slice(0, 1), connections: OVERLOAD_CONNECTIONS, seconds: SECONDS, firstN: next() }), true);
    results.overload = row('this project', `overload: ${OVERLOAD_CONNECTIONS} connections on one source`, over.r, over.cpu, ` 429 with Retry-After: ${over.r.rejected} |`);
    // A row counts as lost what had not arrived when it ended; here, everything accepted in the run, however late.
    const missing = () => [...acceptedByUs].filter((x) => !receiver.ever.has(x)).length;
    await until(async () => missing() === 0, { what: 'every accepted request delivered', timeoutMs: 120_000 }).catch(() => undefined);
    results.whole_run = { accepted: acceptedByUs.size, never_delivered: missing() };
    console.log(`\nthis project, whole run: ${acceptedByUs.size} requests answered 2xx, ${missing()} never delivered (waited up to 120 s after the last row)`);
    console.log(JSON.stringify({ bench: 'peers', seconds: SECONDS, connections: CONNECTIONS, load_average: os.loadavg(), results }));
  } finally {
    await receiver.close();
    await red?.stop();
    await system?.stop();
  }
}

main().catch((e) => {
  console.error(`peers bench failed: ${e.stack || e.message}`);
  process.exit(1);
});
