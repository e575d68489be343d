'use strict';
// `npm run bench -- peers`: the pipeline users compare systems on, run against
// this project and Node-RED 4 in the same run, with the same load generator
// (bench/support/load.js) and the same webhook receiver (bench/support/receiver.js):
// HTTP POST of a 200-byte JSON body → a source's run emits it → subscription →
// signed POST to the receiver (Node-RED: http in → function → http request).
// Before the rows each system gets the same warm-up: PEERS_WARMUP_SECONDS (6) of the closed loop, half over
// every endpoint, half on the hot one, every event delivered before the next step.
// Scenarios: one hot endpoint and PEERS_ENDPOINTS endpoints, PEERS_CONNECTIONS
// keep-alive connections for PEERS_SECONDS each (closed loop), PEERS_ROUNDS times per system in
// A-B-B-A order (the machine's speed drifts: both systems see its phases alike), then the
// rounds combined and their ratio, with a check that the machine ran as fast in each system's rounds; latency at
// PEERS_RATE requests/s offered to one endpoint (open loop); and this project
// under overload: PEERS_OVERLOAD_CONNECTIONS senders on one source, each waiting
// out a 429's Retry-After before it sends again (back-pressure).
// Each row: accepted/s, delivered/s, request → receipt p50/p99, late (accepted and
// not received when nothing more had arrived for 15 s; the run's end checks they all
// came), duplicates,
// CPU per delivered event per process, the machine's load average, new connections to the receiver,
// and (this project) events indexed, routed through DELIVERIES, and failed POST attempts.
const os = require('node:os');
const path = require('node:path');
const ROOT = path.join(__dirname, '..');
const support = require(path.join(ROOT, 'bench/support/system'));
const { closedLoop, openLoop } = require(path.join(ROOT, 'bench/support/load'));
const { benchHttpKind } = require(path.join(ROOT, 'bench/support/http-client'));
const { startReceiver } = require(path.join(ROOT, 'bench/support/receiver'));
const { startNodeRed } = require(path.join(ROOT, 'bench/support/node-red'));
const { deployPipeline, FORWARDER, PIPELINE_SYSTEM_ENV } = require(path.join(ROOT, 'bench/support/pipeline'));

const { startSystem, until, percentile, scrape, total, cpuParts, systemCpuSources, benchClientCpu, cpuSecondsOfTree } = support;
const SECONDS = Number(process.env.PEERS_SECONDS || 15);
const CONNECTIONS = Number(process.env.PEERS_CONNECTIONS || 32);
const ENDPOINTS = Number(process.env.PEERS_ENDPOINTS || 20);
const RATE = Number(process.env.PEERS_RATE || 1000);
const RATE_SECONDS = Number(process.env.PEERS_RATE_SECONDS || 10);
const OVERLOAD_CONNECTIONS = Number(process.env.PEERS_OVERLOAD_CONNECTIONS || 512);
const ROUNDS = Math.max(1, Number(process.env.PEERS_ROUNDS || 2));
const WARMUP_SECONDS = Number(process.env.PEERS_WARMUP_SECONDS || 6);
/** The bench client's CPU per event may differ this much between one system's rounds before the ratio is flagged. */
const CLIENT_DRIFT_MAX = 0.25;
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
    latencies: lat,
  };
}

/** Several measurements of one system and scenario as one: counts and wall times added, latencies merged, CPU per event weighted. */
function combine(ms) {
  const sum = (f) => ms.reduce((a, m) => a + f(m), 0);
  const delivered = sum((m) => m.r.delivered);
  const accepted = sum((m) => m.r.accepted);
  const wallMs = sum((m) => m.r.wallMs);
  const lat = ms.flatMap((m) => m.r.latencies).sort((a, b) => a - b);
  const r = {
    accepted,
    rejected: sum((m) => m.r.rejected),
    failed: sum((m) => m.r.failed),
    delivered,
    lost: sum((m) => m.r.lost),
    duplicates: sum((m) => m.r.duplicates),
    receiverConnections: sum((m) => m.r.receiverConnections),
    wallMs,
    acceptedPerS: accepted / sum((m) => m.r.accepted / m.r.acceptedPerS),
    deliveredPerS: delivered / (wallMs / 1000),
    p50: percentile(lat, 0.5),
    p99: percentile(lat, 0.99),
    latencies: lat,
  };
  const names = ms[0].cpu.parts.map((p) => p.name);
  const parts = names.map((name) => ({ name, perItemUs: sum((m) => m.cpu.parts.find((p) => p.name === name).perItemUs * m.r.delivered) / Math.max(1, delivered) }));
  return { r, cpu: { parts } };
}

/**
 * The bench client's CPU per event in a measurement. It runs the same code for both systems, but what that code costs
 * per event depends on the system it talks to (how fast and how bunched its answers and its deliveries come: in runs
 * 20 and 21 every Node-RED row cost the client 180–240 µs, every row of this project 130–180), so it is a yardstick
 * of the machine's speed between rounds of one system only.
 */
const clientUs = (m) => m.cpu.parts.find((p) => p.name === 'bench client').perItemUs;

/** How far apart the bench client's costs in one system's rounds are (0 with one round: nothing to compare). */
function clientSpread(rounds) {
  const costs = rounds.map(clientUs);
  return (Math.max(...costs) - Math.min(...costs)) / Math.min(...costs);
}

function row(system, scenario, r, cpu, extra = '') {
  const per = cpu.parts.map((p) => `${p.name} ${Math.round(p.perItemUs)}`).join(', ');
  const sum = cpu.parts.filter((p) => p.name !== 'bench client').reduce((a, p) => a + p.perItemUs, 0);
  console.log(
    `| ${system} | ${scenario} | ${Math.round(r.acceptedPerS)} | ${Math.round(r.deliveredPerS)} | ${r.p50} ms | ${r.p99} ms | ${r.lost} | ${r.duplicates} | ${Math.round(sum)} µs (${per}) | ${load()} |${r.receiverConnections === undefined ? '' : ` receiver connections ${r.receiverConnections} |`}${extra}`,
  );
  const { latencies: _latencies, ...figures } = r;
  return { ...figures, cpuUsPerEvent: Math.round(sum) };
}

/** Every request this project accepted in the run (all rows), to check at the end that each one arrived, however late. */
const acceptedByUs = new Set();

async function measure(receiver, cpuSources, run, ours = false) {
  receiver.reset();
  const account = cpuParts(cpuSources);
  const connectionsBefore = receiver.connections;
  const stats = await run();
  if (ours) for (const n of stats.acceptedN.keys()) acceptedByUs.add(n);
  const r = await settle(receiver, stats);
  r.receiverConnections = receiver.connections - connectionsBefore;
  return { r, cpu: account.done(r.wallMs, Math.max(1, r.delivered)) };
}

async function main() {
  console.log(`peers: ${SECONDS} s × ${CONNECTIONS} connections per closed-loop row, ${ROUNDS} round(s) per system (A-B-B-A); load average (1, 5, 15 min) at each row's end; ${os.cpus().length} cores; bench client over ${benchHttpKind()}`);
  const receiver = await startReceiver();
  let red;
  let system;
  const results = {};
  try {
    red = await startNodeRed({ endpoints: ENDPOINTS, receiverUrl: receiver.url });
    system = await startSystem(PIPELINE_SYSTEM_ENV);
    const { urls } = await deployPipeline(system, receiver, { count: ENDPOINTS, code: FORWARDER, name: 'peer' });
    // Warm-up, the same for both (every endpoint, then the hot one): code compiled, connections open, sandboxes started.
    // Each step numbers its requests apart from the others' (the receiver tells events apart by number).
    let warmupN = -8_000_000;
    for (const target of [red.urls, urls]) {
      for (const slice of [target, target.slice(0, 1)]) {
        const stats = await closedLoop({ urls: slice, connections: CONNECTIONS, seconds: WARMUP_SECONDS / 2, firstN: (warmupN += 1_000_000) });
        await settle(receiver, stats);
      }
    }
    await new Promise((r) => setTimeout(r, 2000));

    const ours = { ...systemCpuSources(system, ['api', 'runner', 'delivery']), 'bench client': benchClientCpu };
    const theirs = { 'node-red': () => cpuSecondsOfTree(red.pid), 'bench client': benchClientCpu };
    const deliveryPort = system.ports.delivery;
    // What delivery did with a row's events: indexed, routed through DELIVERIES (not POSTed directly), attempts that failed.
    const deliveryCounts = async () => {
      const m = await scrape(deliveryPort);
      return { indexed: total(m, 'delivery_events_indexed_total{channel_class="emits"}'), queued: m['delivery_webhook_routes_total{path="queue"}'] ?? 0, failed: m['delivery_webhook_attempts_total{outcome="failed"}'] ?? 0 };
    };
    let n = 0;
    const next = () => (n += 10_000_000);

    console.log(`\n| system | scenario | accepted/s | delivered/s | p50 | p99 | late | duplicates | CPU per delivered event | load avg |`);
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    for (const [scenario, count] of [['one hot source', 1], [`${ENDPOINTS} sources`, ENDPOINTS]]) {
      const theirRounds = [];
      const ourRounds = [];
      const runTheirs = async (round) => {
        const m = await measure(receiver, theirs, () => closedLoop({ urls: red.urls.slice(0, count), connections: CONNECTIONS, seconds: SECONDS, firstN: next() }));
        theirRounds.push(m);
        row(`Node-RED ${red.version}`, `${scenario}, round ${round}`, m.r, m.cpu);
      };
      const runOurs = async (round) => {
        const before = await deliveryCounts();
        const m = await measure(receiver, ours, () => closedLoop({ urls: urls.slice(0, count), connections: CONNECTIONS, seconds: SECONDS, firstN: next() }), true);
        await new Promise((r) => setTimeout(r, 1000));
        ourRounds.push(m);
        const after = await deliveryCounts();
        const extra = ` indexed ${after.indexed - before.indexed}/${m.r.delivered}; through DELIVERIES ${after.queued - before.queued}, failed attempts ${after.failed - before.failed} |`;
        row('this project', `${scenario}, round ${round}`, m.r, m.cpu, extra);
      };
      for (let round = 1; round <= ROUNDS; round++) {
        for (const run of round % 2 ? [runTheirs, runOurs] : [runOurs, runTheirs]) await run(round);
      }
      const nr = combine(theirRounds);
      const me = combine(ourRounds);
      const label = `${scenario}, ${ROUNDS} round${ROUNDS > 1 ? 's' : ''}`;
      results[`node-red ${scenario}`] = row(`**Node-RED ${red.version}**`, `**${label}**`, nr.r, nr.cpu);
      results[`ours ${scenario}`] = row('**this project**', `**${label}**`, me.r, me.cpu);
      // If the client's cost moved much between one system's rounds, the machine's speed changed between them.
      const [a, b] = [theirRounds.map(clientUs).map(Math.round), ourRounds.map(clientUs).map(Math.round)];
      const drifted = Math.max(clientSpread(theirRounds), clientSpread(ourRounds)) > CLIENT_DRIFT_MAX;
      const check = ROUNDS < 2
        ? ' (one round per system: a change of the machine\'s speed cannot be seen)'
        : drifted ? ` (the machine's speed changed: bench client ${a.join(', ')} µs/event in Node-RED's rounds, ${b.join(', ')} in ours; this ratio compares machines, run again)` : '';
      results[`ratio ${scenario}`] = { ratio: me.r.deliveredPerS / nr.r.deliveredPerS, benchClientUs: { nodeRed: a, ours: b }, comparable: ROUNDS >= 2 && !drifted };
      console.log(`|  | ratio (delivered/s) | | **${(me.r.deliveredPerS / nr.r.deliveredPerS).toFixed(2)}×**${check} | | | | | | |`);
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
    console.log(JSON.stringify({ bench: 'peers', seconds: SECONDS, connections: CONNECTIONS, rounds: ROUNDS, load_average: os.loadavg(), results }));
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
